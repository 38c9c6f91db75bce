// SPDX-License-Identifier: Apache-2.0
// Polyval as every framework binds it (constmem/op_description.hpp): the op's names, its table and
// how its CPU kernel and GPU launcher run.
#pragma once

#include <cstdint>

#include "constmem/op_description.hpp"
#include "polyval/polyval_cpu.h"
#include "polyval/polyval_functor.h"
#include "polyval/polyval_launcher.h"

namespace constmem {
namespace ops {

struct PolyvalOp : OpDescription {
  static constexpr OpNames kNames{"constmem", "Polyval", "polyval", "x", "coeffs"};
  static constexpr TableRule kTable{1, kPolyvalMaxCoefficients};
  static constexpr std::int64_t kMaxElements = kPolyvalMaxElements;
  static constexpr DataTypeSet kDataTypes{DataType::kFloat32, DataType::kFloat64,
                                          DataType::kFloat16, DataType::kBFloat16};
  static constexpr const char* kDoc = R"doc(
y = polyval(coeffs, x) by Horner's rule with one fused multiply-add per coefficient:
y = coeffs[0]; y = fma(y, x, coeffs[j]) for j = 1 .. n-1. Highest degree first, as np.polyval.
x: any shape, float32, float64, float16 or bfloat16 (computed in float32, each result rounded to
  nearest even: the float32 result cast to x's dtype).
coeffs: vector of 1 to 1048576 coefficients, float64 for float64 x, else float32.
)doc";

  // T is the data's type; the coefficients are ComputeTypeOf<T>, the type it is computed in.
  template <class T, class Shard>
  static void RunCpu(const Params&, const Shape& shape, const T* x, T* y,
                     const ComputeTypeOf<T>* coeffs, std::int64_t count, const Shard& shard) {
    shard(shape.elements, count + 2, [&](std::int64_t begin, std::int64_t end) {
      PolyvalCpuRange(x, y, begin, end, coeffs, count);
    });
  }
  template <class T>
  static Status Launch(GpuStream stream, const Params&, const Shape& shape, const T* x, T* y,
                       const TableView<ComputeTypeOf<T>>& coeffs) {
    return LaunchPolyval<T>(stream, x, y, shape.elements, coeffs);
  }
  template <class T>
  static Placement Place(std::int64_t count, SourceKind source, std::int64_t launch_elements) {
    return PolyvalPlacement<ComputeTypeOf<T>>(count, source, launch_elements);
  }
};

}  // namespace ops
}  // namespace constmem
