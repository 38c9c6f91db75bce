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

struct InterpolateFfi : FfiTableOp {
  using Attrs = std::tuple<double, double>;
  static constexpr const char* kAttrNames[] = {"lo", "hi"};
  template <class T>
  static Status RunOnHost(const ffi::AnyBuffer& x, T* y, const TableView<T>& knots, double lo,
                          double hi) {
    ops::InterpolateGrid<T> grid{};
    CONSTMEM_RETURN_IF_ERROR(ops::MakeInterpolateGrid<T>(lo, hi, knots.size, &grid));
    ops::InterpolateCpuRange(x.typed_data<T>(), y, 0, static_cast<std::int64_t>(x.element_count()),
                             knots.values, grid);
    return Status::Ok();
  }
#if CONSTMEM_WITH_GPU
  template <class T>
  static Status RunOnCuda(GpuStream stream, const ffi::AnyBuffer& x, T* y,
                          const TableView<T>& knots, double lo, double hi) {
    return ops::LaunchInterpolate<T>(stream, x.typed_data<T>(), y,
                                     static_cast<std::int64_t>(x.element_count()), knots, lo, hi);
  }
#endif
};

}  // namespace xla_ffi
}  // namespace constmem

CONSTMEM_DEFINE_FFI_TABLE_HANDLERS(constmem_interpolate, constmem::xla_ffi::InterpolateFfi);
