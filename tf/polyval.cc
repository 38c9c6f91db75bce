// SPDX-License-Identifier: Apache-2.0
// Polyval for TensorFlow: Constmem>Polyval, ...HostTable and ...Attr (adapter/table_op.h).
#include <cstdint>

#include "adapter/table_op.h"
#include "polyval/polyval_cpu.h"
#include "polyval/polyval_functor.h"
#if CONSTMEM_WITH_XLA
#include "adapter/xla/xla_lowering.h"
#include "handlers.h"
#endif
#if CONSTMEM_WITH_GPU
#include "polyval/polyval_launcher.h"
#endif

namespace constmem {
namespace ops {

struct PolyvalTf : tf_adapter::TableOp {
  static constexpr const char* kName = "Constmem>Polyval";
  static constexpr const char* kData = "x";
  static constexpr const char* kTable = "coeffs";
  static constexpr std::int64_t kMaxTable = kPolyvalMaxCoefficients;
  static constexpr std::int64_t kMaxElements = kPolyvalMaxElements;
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
#if CONSTMEM_WITH_GPU
  template <class T>
  static Status Launch(GpuStream stream, const Params&, const Shape& shape, const T* x, T* y,
                       const TableView<T>& coeffs) {
    return LaunchPolyval<T>(stream, x, y, shape.elements, coeffs);
  }
  template <class T>
  static Placement Place(std::int64_t count, SourceKind source) {
    return PolyvalPlacement<T>(count, source);
  }
#endif
};

}  // namespace ops
}  // namespace constmem

CONSTMEM_REGISTER_TABLE_OP(constmem::ops::PolyvalTf);
#if CONSTMEM_WITH_XLA
CONSTMEM_REGISTER_TABLE_OP_XLA(constmem::ops::PolyvalTf, "constmem_polyval", constmem_polyval_host,
                               CONSTMEM_XLA_CUDA_HANDLER(constmem_polyval_cuda));
#endif
