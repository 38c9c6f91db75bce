// SPDX-License-Identifier: Apache-2.0
// Polyval for TensorFlow: Constmem>Polyval, ...HostTable and ...Attr (adapter/table_op.h).
#include <cstdint>

#include "adapter/table_op.h"
#include "polyval/polyval_cpu.h"
#include "polyval/polyval_functor.h"
#include "polyval/polyval_launcher.h"
#if CONSTMEM_WITH_XLA
#include "handlers.h"  // the FFI handlers
#endif

namespace constmem {
namespace ops {

struct PolyvalTf : tf_adapter::TableOp {
  static constexpr tf_adapter::TableOpNames kNames{"Constmem>Polyval", "x", "coeffs"};
  static constexpr tf_adapter::TableOpLimits kLimits{1, kPolyvalMaxCoefficients,
                                                     kPolyvalMaxElements};
  static constexpr const char* kDoc = R"doc(
y = polyval(coeffs, x) by Horner's rule with one fused multiply-add per coefficient:
y = coeffs[0]; y = fma(y, x, coeffs[j]) for j = 1 .. n-1. Highest degree first, as np.polyval.
x: any shape, float32 or float64.
coeffs: vector of 1 to 4096 coefficients of x's dtype.
)doc";

  template <class T, class Shard>
  static void RunCpu(const Params&, const Shape& shape, const T* x, T* y, const T* coeffs,
                     std::int64_t count, const Shard& shard) {
    shard(shape.elements, count + 2, [&](std::int64_t begin, std::int64_t end) {
      PolyvalCpuRange(x, y, begin, end, coeffs, count);
    });
  }
  template <class T>
  static Status Launch(GpuStream stream, const Params&, const Shape& shape, const T* x, T* y,
                       const TableView<T>& coeffs) {
    return LaunchPolyval<T>(stream, x, y, shape.elements, coeffs);
  }
  template <class T>
  static Placement Place(std::int64_t count, SourceKind source) {
    return PolyvalPlacement<T>(count, source);
  }
};

}  // namespace ops
}  // namespace constmem

CONSTMEM_REGISTER_TABLE_OP(constmem::ops::PolyvalTf);
CONSTMEM_REGISTER_TABLE_OP_XLA(constmem::ops::PolyvalTf, "constmem_polyval", constmem_polyval_host,
                               CONSTMEM_XLA_CUDA_HANDLER(constmem_polyval_cuda));
