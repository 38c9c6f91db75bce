// SPDX-License-Identifier: Apache-2.0
// FirFilter's XLA FFI handlers (handlers.h): x (rank 1 or more, filtered along its last axis)
// and taps of x's dtype in, with the int64 attribute `same` (1: SAME padding, 0: VALID).
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

struct FirFilterFfi : FfiTableOp {
  using Attrs = std::tuple<std::int64_t>;
  static constexpr const char* kAttrNames[] = {"same"};
  // The filter's shape from x's dimensions.
  static Status ShapeOf(const ffi::AnyBuffer& x, std::int64_t taps, std::int64_t same,
                        ops::FirShape* shape) {
    const auto dims = x.dimensions();
    if (dims.size() == 0) return InvalidArgument("x must have rank 1 or more");
    std::int64_t rows = 1;
    for (std::size_t d = 0; d + 1 < dims.size(); ++d) rows *= dims[d];
    *shape = ops::MakeFirShape(rows, dims.back(), taps,
                               same ? ops::FirPadding::kSame : ops::FirPadding::kValid);
    return Status::Ok();
  }
  template <class T>
  static Status RunOnHost(const ffi::AnyBuffer& x, T* y, const TableView<T>& taps,
                          std::int64_t same) {
    ops::FirShape shape;
    CONSTMEM_RETURN_IF_ERROR(ShapeOf(x, taps.size, same, &shape));
    ops::FirFilterCpuRange(x.typed_data<T>(), y, shape, taps.values, 0, shape.rows * shape.outputs);
    return Status::Ok();
  }
#if CONSTMEM_WITH_GPU
  template <class T>
  static Status RunOnCuda(GpuStream stream, const ffi::AnyBuffer& x, T* y, const TableView<T>& taps,
                          std::int64_t same) {
    ops::FirShape shape;
    CONSTMEM_RETURN_IF_ERROR(ShapeOf(x, taps.size, same, &shape));
    return ops::LaunchFirFilter<T>(stream, x.typed_data<T>(), y, shape, taps);
  }
#endif
};

}  // namespace xla_ffi
}  // namespace constmem

CONSTMEM_DEFINE_FFI_TABLE_HANDLERS(constmem_fir_filter, constmem::xla_ffi::FirFilterFfi);
