// SPDX-License-Identifier: Apache-2.0
// Interpolate as every framework binds it (constmem/op_description.hpp).
#pragma once

#include <cstdint>

#include "constmem/op_description.hpp"
#include "interpolate/interpolate_cpu.h"
#include "interpolate/interpolate_functor.h"
#include "interpolate/interpolate_launcher.h"

namespace constmem {
namespace ops {

struct InterpolateOp : OpDescription {
  static constexpr OpNames kNames{"constmem", "Interpolate", "interpolate", "x", "knots"};
  static constexpr TableRule kTable{kInterpolateMinKnots, kInterpolateMaxKnots};
  static constexpr std::int64_t kMaxElements = kInterpolateMaxElements;
  static constexpr AttrSpec kAttrs[] = {{"lo", AttrKind::kFloat64}, {"hi", AttrKind::kFloat64}};
  static constexpr int kAttrCount = 2;
  static constexpr DataTypeSet kDataTypes{DataType::kFloat32, DataType::kFloat64,
                                          DataType::kFloat16, DataType::kBFloat16};
  static constexpr const char* kDoc = R"doc(
Piecewise-linear interpolation into `knots`, n values at n equally spaced points over [lo, hi],
clamped at the ends: np.interp(x, np.linspace(lo, hi, n), knots), with
t = (x - lo) * ((n - 1) / (hi - lo)), i = floor(t), y = fma(t - i, knots[i+1] - knots[i], knots[i]).
x: any shape, float32, float64, float16 or bfloat16 (computed in float32, each result rounded to
  nearest even: the float32 result cast to x's dtype).
knots: vector of 2 to 1048576 values, float64 for float64 x, else float32.
lo, hi: where the first and the last knot lie (float64 bit patterns); lo < hi in the dtype x is
  computed in (float32 for float16 and bfloat16 x).
)doc";

  // [lo, hi], checked in the type the data is computed in (with the fewest knots until their
  // number is known): float16 and bfloat16 data has float32's grid.
  struct Params {
    double lo = 0;
    double hi = 1;
    bool float32 = true;
    Status Read(const AttrValue* values, DataType dtype) {
      lo = values[0].float64;
      hi = values[1].float64;
      float32 = dtype != DataType::kFloat64;
      return CheckGrid(kInterpolateMinKnots);
    }
    Status CheckGrid(std::int64_t knots) const {
      InterpolateGrid<float> narrow{};
      InterpolateGrid<double> wide{};
      return float32 ? MakeInterpolateGrid<float>(lo, hi, knots, &narrow)
                     : MakeInterpolateGrid<double>(lo, hi, knots, &wide);
    }
  };

  static Status Output(const Dims& x, const Params& params, std::int64_t knots, Shape* shape,
                       Dims* y) {
    if (knots >= 0) CONSTMEM_RETURN_IF_ERROR(params.CheckGrid(knots));
    return OpDescription::Output(x, params, knots, shape, y);
  }

  // T is the data's type; the knots are ComputeTypeOf<T>, the type it is computed in.
  template <class T, class Shard>
  static void RunCpu(const Params& params, const Shape& shape, const T* x, T* y,
                     const ComputeTypeOf<T>* knots, std::int64_t count, const Shard& shard) {
    InterpolateGrid<ComputeTypeOf<T>> grid{};
    MakeInterpolateGrid<ComputeTypeOf<T>>(params.lo, params.hi, count, &grid);  // checked by Output
    shard(shape.elements, 8, [&](std::int64_t begin, std::int64_t end) {
      InterpolateCpuRange(x, y, begin, end, knots, grid);
    });
  }
  template <class T>
  static Status Launch(GpuStream stream, const Params& params, const Shape& shape, const T* x, T* y,
                       const TableView<ComputeTypeOf<T>>& knots) {
    return LaunchInterpolate<T>(stream, x, y, shape.elements, knots, params.lo, params.hi);
  }
  template <class T>
  static Placement Place(std::int64_t count, SourceKind source, std::int64_t launch_elements) {
    return InterpolatePlacement<ComputeTypeOf<T>>(count, source, launch_elements);
  }
};

}  // namespace ops
}  // namespace constmem
