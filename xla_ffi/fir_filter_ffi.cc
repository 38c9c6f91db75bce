// SPDX-License-Identifier: Apache-2.0
// FirFilter's XLA FFI handlers (handlers.h): x and taps of x's dtype in, the filtered rows out;
// the attribute `same` picks the padding.
#include <cstddef>
#include <cstdint>

#include "ffi_support.h"
#include "fir_filter/fir_filter_cpu.h"
#include "fir_filter/fir_filter_functor.h"
#include "handlers.h"
#if CONSTMEM_WITH_GPU
#include "fir_filter/fir_filter_launcher.h"
#endif

namespace constmem {
namespace xla_ffi {
namespace {

using ops::FirPadding;
using ops::FirShape;

// The filter's shape from x's dimensions (rank 1 or more, checked when the call was built).
FirShape ShapeOf(const ffi::AnyBuffer& x, std::int64_t taps, std::int64_t same) {
  const auto dims = x.dimensions();
  std::int64_t rows = 1;
  for (std::size_t d = 0; d + 1 < dims.size(); ++d) rows *= dims[d];
  return ops::MakeFirShape(rows, dims.back(), taps, same ? FirPadding::kSame : FirPadding::kValid);
}

ffi::Error FirFilterHost(ffi::AnyBuffer x, ffi::AnyBuffer taps, ffi::Result<ffi::AnyBuffer> y,
                         std::int64_t same) {
  if (x.dimensions().size() == 0) {
    return ffi::Error(ffi::ErrorCode::kInvalidArgument, "x must have rank 1 or more");
  }
  return ForFloatTypeOnHost(x.element_type(), [&](auto zero) {
    using T = decltype(zero);
    const FirShape shape = ShapeOf(x, static_cast<std::int64_t>(taps.element_count()), same);
    ops::FirFilterCpuRange(x.typed_data<T>(), y->typed_data<T>(), shape, taps.typed_data<T>(), 0,
                           shape.rows * shape.outputs);
    return ffi::Error::Success();
  });
}

#if CONSTMEM_WITH_GPU
ffi::Error FirFilterCuda(GpuStream stream, ffi::AnyBuffer x, ffi::AnyBuffer taps,
                         ffi::Result<ffi::AnyBuffer> y, std::int64_t same) {
  if (x.dimensions().size() == 0) {
    return ffi::Error(ffi::ErrorCode::kInvalidArgument, "x must have rank 1 or more");
  }
  return ForFloatType(x.element_type(), [&](auto zero) {
    using T = decltype(zero);
    const auto count = static_cast<std::int64_t>(taps.element_count());
    const TableView<T> view{taps.typed_data<T>(), count, SourceKind::kDevice};
    return FfiError(ops::LaunchFirFilter<T>(stream, x.typed_data<T>(), y->typed_data<T>(),
                                            ShapeOf(x, count, same), view));
  });
}
#endif

}  // namespace
}  // namespace xla_ffi
}  // namespace constmem

namespace ffi = ::xla::ffi;

XLA_FFI_DEFINE_HANDLER_SYMBOL(constmem_fir_filter_host, constmem::xla_ffi::FirFilterHost,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<std::int64_t>("same"));
#if CONSTMEM_WITH_GPU
XLA_FFI_DEFINE_HANDLER_SYMBOL(constmem_fir_filter_cuda, constmem::xla_ffi::FirFilterCuda,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<constmem::GpuStream>>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<std::int64_t>("same"),
                              {ffi::Traits::kCmdBufferCompatible});
#endif
