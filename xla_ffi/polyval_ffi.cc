// SPDX-License-Identifier: Apache-2.0
// Polyval's XLA FFI handlers (handlers.h): x and coefficients of x's dtype in, x's shape out.
#include <cstdint>

#include "ffi_support.h"
#include "handlers.h"
#include "polyval/polyval_cpu.h"
#if CONSTMEM_WITH_GPU
#include "polyval/polyval_launcher.h"
#endif

namespace constmem {
namespace xla_ffi {
namespace {

ffi::Error PolyvalHost(ffi::AnyBuffer x, ffi::AnyBuffer coeffs, ffi::Result<ffi::AnyBuffer> y) {
  return ForFloatTypeOnHost(x.element_type(), [&](auto zero) {
    using T = decltype(zero);
    ops::PolyvalCpuRange(x.typed_data<T>(), y->typed_data<T>(), 0,
                         static_cast<std::int64_t>(x.element_count()), coeffs.typed_data<T>(),
                         static_cast<std::int64_t>(coeffs.element_count()));
    return ffi::Error::Success();
  });
}

#if CONSTMEM_WITH_GPU
ffi::Error PolyvalCuda(GpuStream stream, ffi::AnyBuffer x, ffi::AnyBuffer coeffs,
                       ffi::Result<ffi::AnyBuffer> y) {
  return ForFloatType(x.element_type(), [&](auto zero) {
    using T = decltype(zero);
    const TableView<T> view{coeffs.typed_data<T>(),
                            static_cast<std::int64_t>(coeffs.element_count()), SourceKind::kDevice};
    return FfiError(ops::LaunchPolyval<T>(stream, x.typed_data<T>(), y->typed_data<T>(),
                                          static_cast<std::int64_t>(x.element_count()), view));
  });
}
#endif

}  // namespace
}  // namespace xla_ffi
}  // namespace constmem

namespace ffi = ::xla::ffi;

XLA_FFI_DEFINE_HANDLER_SYMBOL(
    constmem_polyval_host, constmem::xla_ffi::PolyvalHost,
    ffi::Ffi::Bind().Arg<ffi::AnyBuffer>().Arg<ffi::AnyBuffer>().Ret<ffi::AnyBuffer>());
#if CONSTMEM_WITH_GPU
XLA_FFI_DEFINE_HANDLER_SYMBOL(constmem_polyval_cuda, constmem::xla_ffi::PolyvalCuda,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<constmem::GpuStream>>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>(),
                              {ffi::Traits::kCmdBufferCompatible});
#endif
