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

// Calls fn(T{}) for x's float type once x is known to have rows; on the host with denormals
// flushed.
template <class Fn>
ffi::Error ForFilterRows(const ffi::AnyBuffer& x, bool on_host, Fn&& fn) {
  if (x.dimensions().size() == 0) {
    return ffi::Error(ffi::ErrorCode::kInvalidArgument, "x must have rank 1 or more");
  }
  return on_host ? ForFloatTypeOnHost(x.element_type(), fn) : ForFloatType(x.element_type(), fn);
}

template <class T>
ffi::Error FirOnHost(ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y, const T* taps,
                     std::int64_t count, std::int64_t same) {
  const FirShape shape = ShapeOf(x, count, same);
  ops::FirFilterCpuRange(x.typed_data<T>(), y->typed_data<T>(), shape, taps, 0,
                         shape.rows * shape.outputs);
  return ffi::Error::Success();
}

ffi::Error FirFilterHost(ffi::AnyBuffer x, ffi::AnyBuffer taps, ffi::Result<ffi::AnyBuffer> y,
                         std::int64_t same) {
  return ForFilterRows(x, true, [&](auto zero) {
    using T = decltype(zero);
    return FirOnHost<T>(x, y, taps.typed_data<T>(), static_cast<std::int64_t>(taps.element_count()),
                        same);
  });
}

ffi::Error FirFilterStaticHost(ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y,
                               ffi::Span<const double> taps, std::int64_t same) {
  return ForFilterRows(x, true, [&](auto zero) {
    using T = decltype(zero);
    const StaticTable<T> table(taps);
    return FirOnHost<T>(x, y, table.data(), table.size(), same);
  });
}

#if CONSTMEM_WITH_GPU
template <class T>
ffi::Error FirOnCuda(GpuStream stream, ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y,
                     const TableView<T>& taps, std::int64_t same) {
  return FfiError(ops::LaunchFirFilter<T>(stream, x.typed_data<T>(), y->typed_data<T>(),
                                          ShapeOf(x, taps.size, same), taps));
}

ffi::Error FirFilterCuda(GpuStream stream, ffi::AnyBuffer x, ffi::AnyBuffer taps,
                         ffi::Result<ffi::AnyBuffer> y, std::int64_t same) {
  return ForFilterRows(x, false, [&](auto zero) {
    using T = decltype(zero);
    const auto count = static_cast<std::int64_t>(taps.element_count());
    return FirOnCuda<T>(stream, x, y, {taps.typed_data<T>(), count, SourceKind::kDevice}, same);
  });
}

ffi::Error FirFilterStaticCuda(GpuStream stream, ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y,
                               ffi::Span<const double> taps, std::int64_t same) {
  return ForFilterRows(x, false, [&](auto zero) {
    using T = decltype(zero);
    const StaticTable<T> table(taps);
    return FirOnCuda<T>(stream, x, y, table.View(), same);
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
XLA_FFI_DEFINE_HANDLER_SYMBOL(constmem_fir_filter_static_host,
                              constmem::xla_ffi::FirFilterStaticHost,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<ffi::Span<const double>>("table")
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
XLA_FFI_DEFINE_HANDLER_SYMBOL(constmem_fir_filter_static_cuda,
                              constmem::xla_ffi::FirFilterStaticCuda,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<constmem::GpuStream>>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<ffi::Span<const double>>("table")
                                  .Attr<std::int64_t>("same"),
                              {ffi::Traits::kCmdBufferCompatible});
#endif
