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

template <class T>
ffi::Error PolyvalOnHost(ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y, const T* coeffs,
                         std::int64_t count) {
  ops::PolyvalCpuRange(x.typed_data<T>(), y->typed_data<T>(), 0,
                       static_cast<std::int64_t>(x.element_count()), coeffs, count);
  return ffi::Error::Success();
}

ffi::Error PolyvalHost(ffi::AnyBuffer x, ffi::AnyBuffer coeffs, ffi::Result<ffi::AnyBuffer> y) {
  return ForFloatTypeOnHost(x.element_type(), [&](auto zero) {
    using T = decltype(zero);
    return PolyvalOnHost<T>(x, y, coeffs.typed_data<T>(),
                            static_cast<std::int64_t>(coeffs.element_count()));
  });
}

ffi::Error PolyvalStaticHost(ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y,
                             ffi::Span<const double> coeffs) {
  return ForFloatTypeOnHost(x.element_type(), [&](auto zero) {
    using T = decltype(zero);
    const StaticTable<T> table(coeffs);
    return PolyvalOnHost<T>(x, y, table.data(), table.size());
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

ffi::Error PolyvalStaticCuda(GpuStream stream, ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y,
                             ffi::Span<const double> coeffs) {
  return ForFloatType(x.element_type(), [&](auto zero) {
    using T = decltype(zero);
    const StaticTable<T> table(coeffs);
    return FfiError(ops::LaunchPolyval<T>(stream, x.typed_data<T>(), y->typed_data<T>(),
                                          static_cast<std::int64_t>(x.element_count()),
                                          table.View()));
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
XLA_FFI_DEFINE_HANDLER_SYMBOL(
    constmem_polyval_static_host, constmem::xla_ffi::PolyvalStaticHost,
    ffi::Ffi::Bind().Arg<ffi::AnyBuffer>().Ret<ffi::AnyBuffer>().Attr<ffi::Span<const double>>(
        "table"));
#if CONSTMEM_WITH_GPU
XLA_FFI_DEFINE_HANDLER_SYMBOL(constmem_polyval_cuda, constmem::xla_ffi::PolyvalCuda,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<constmem::GpuStream>>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>(),
                              {ffi::Traits::kCmdBufferCompatible});
XLA_FFI_DEFINE_HANDLER_SYMBOL(constmem_polyval_static_cuda, constmem::xla_ffi::PolyvalStaticCuda,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<constmem::GpuStream>>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<ffi::Span<const double>>("table"),
                              {ffi::Traits::kCmdBufferCompatible});
#endif
