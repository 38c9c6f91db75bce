// SPDX-License-Identifier: Apache-2.0
// Interpolate's XLA FFI handlers (handlers.h): x and knots of x's dtype in, x's shape out, with
// f64 attributes `lo` and `hi`.
#include <cstdint>

#include "ffi_support.h"
#include "handlers.h"
#include "interpolate/interpolate_cpu.h"
#include "interpolate/interpolate_functor.h"
#if CONSTMEM_WITH_GPU
#include "interpolate/interpolate_launcher.h"
#endif

namespace constmem {
namespace xla_ffi {
namespace {

template <class T>
ffi::Error InterpolateOnHost(ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y, const T* knots,
                             std::int64_t count, double lo, double hi) {
  ops::InterpolateGrid<T> grid{};
  const Status status = ops::MakeInterpolateGrid<T>(lo, hi, count, &grid);
  if (!status.ok()) return FfiError(status);
  ops::InterpolateCpuRange(x.typed_data<T>(), y->typed_data<T>(), 0,
                           static_cast<std::int64_t>(x.element_count()), knots, grid);
  return ffi::Error::Success();
}

ffi::Error InterpolateHost(ffi::AnyBuffer x, ffi::AnyBuffer knots, ffi::Result<ffi::AnyBuffer> y,
                           double lo, double hi) {
  return ForFloatTypeOnHost(x.element_type(), [&](auto zero) {
    using T = decltype(zero);
    return InterpolateOnHost<T>(x, y, knots.typed_data<T>(),
                                static_cast<std::int64_t>(knots.element_count()), lo, hi);
  });
}

ffi::Error InterpolateStaticHost(ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y, double lo,
                                 double hi, ffi::Span<const double> knots) {
  return ForFloatTypeOnHost(x.element_type(), [&](auto zero) {
    using T = decltype(zero);
    const StaticTable<T> table(knots);
    return InterpolateOnHost<T>(x, y, table.data(), table.size(), lo, hi);
  });
}

#if CONSTMEM_WITH_GPU
ffi::Error InterpolateCuda(GpuStream stream, ffi::AnyBuffer x, ffi::AnyBuffer knots,
                           ffi::Result<ffi::AnyBuffer> y, double lo, double hi) {
  return ForFloatType(x.element_type(), [&](auto zero) {
    using T = decltype(zero);
    const TableView<T> view{knots.typed_data<T>(), static_cast<std::int64_t>(knots.element_count()),
                            SourceKind::kDevice};
    return FfiError(ops::LaunchInterpolate<T>(stream, x.typed_data<T>(), y->typed_data<T>(),
                                              static_cast<std::int64_t>(x.element_count()), view,
                                              lo, hi));
  });
}

ffi::Error InterpolateStaticCuda(GpuStream stream, ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y,
                                 double lo, double hi, ffi::Span<const double> knots) {
  return ForFloatType(x.element_type(), [&](auto zero) {
    using T = decltype(zero);
    const StaticTable<T> table(knots);
    return FfiError(ops::LaunchInterpolate<T>(stream, x.typed_data<T>(), y->typed_data<T>(),
                                              static_cast<std::int64_t>(x.element_count()),
                                              table.View(), lo, hi));
  });
}
#endif

}  // namespace
}  // namespace xla_ffi
}  // namespace constmem

namespace ffi = ::xla::ffi;

XLA_FFI_DEFINE_HANDLER_SYMBOL(constmem_interpolate_host, constmem::xla_ffi::InterpolateHost,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<double>("lo")
                                  .Attr<double>("hi"));
XLA_FFI_DEFINE_HANDLER_SYMBOL(constmem_interpolate_static_host,
                              constmem::xla_ffi::InterpolateStaticHost,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<double>("lo")
                                  .Attr<double>("hi")
                                  .Attr<ffi::Span<const double>>("table"));
#if CONSTMEM_WITH_GPU
XLA_FFI_DEFINE_HANDLER_SYMBOL(constmem_interpolate_cuda, constmem::xla_ffi::InterpolateCuda,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<constmem::GpuStream>>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<double>("lo")
                                  .Attr<double>("hi"),
                              {ffi::Traits::kCmdBufferCompatible});
XLA_FFI_DEFINE_HANDLER_SYMBOL(constmem_interpolate_static_cuda,
                              constmem::xla_ffi::InterpolateStaticCuda,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<constmem::GpuStream>>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<double>("lo")
                                  .Attr<double>("hi")
                                  .Attr<ffi::Span<const double>>("table"),
                              {ffi::Traits::kCmdBufferCompatible});
#endif
