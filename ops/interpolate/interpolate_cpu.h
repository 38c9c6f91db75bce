// SPDX-License-Identifier: Apache-2.0
// Interpolate's CPU kernel: InterpolateElement (interpolate_functor.h) over a range of elements,
// bitwise equal to the GPU kernel. Plain C++.
#pragma once

#include <cstdint>

#include "interpolate/interpolate_functor.h"

#pragma GCC visibility push(hidden)
namespace constmem {
namespace ops {

// y[i] for i in [begin, end), computed in T (ComputeTypeOf<In>; InterpolateData).
template <class In, class T = ComputeTypeOf<In>>
void InterpolateCpuRange(const In* x, In* y, std::int64_t begin, std::int64_t end, const T* knots,
                         const InterpolateGrid<T>& grid);

extern template void InterpolateCpuRange<float, float>(const float*, float*, std::int64_t,
                                                       std::int64_t, const float*,
                                                       const InterpolateGrid<float>&);
extern template void InterpolateCpuRange<double, double>(const double*, double*, std::int64_t,
                                                         std::int64_t, const double*,
                                                         const InterpolateGrid<double>&);
extern template void InterpolateCpuRange<Float16, float>(const Float16*, Float16*, std::int64_t,
                                                         std::int64_t, const float*,
                                                         const InterpolateGrid<float>&);
extern template void InterpolateCpuRange<BFloat16, float>(const BFloat16*, BFloat16*, std::int64_t,
                                                          std::int64_t, const float*,
                                                          const InterpolateGrid<float>&);

}  // namespace ops
}  // namespace constmem
#pragma GCC visibility pop
