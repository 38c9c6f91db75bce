// SPDX-License-Identifier: Apache-2.0
#include "interpolate/interpolate_cpu.h"

#include <cstdint>

namespace constmem {
namespace ops {

template <class In, class T>
void InterpolateCpuRange(const In* x, In* y, std::int64_t begin, std::int64_t end, const T* knots,
                         const InterpolateGrid<T>& grid) {
  // A gather per element: the table stays in L1 or L2, the loop is bound by its loads.
  for (std::int64_t i = begin; i < end; ++i) y[i] = InterpolateData(x[i], knots, grid);
}

template void InterpolateCpuRange<float, float>(const float*, float*, std::int64_t, std::int64_t,
                                                const float*, const InterpolateGrid<float>&);
template void InterpolateCpuRange<double, double>(const double*, double*, std::int64_t,
                                                  std::int64_t, const double*,
                                                  const InterpolateGrid<double>&);
template void InterpolateCpuRange<Float16, float>(const Float16*, Float16*, std::int64_t,
                                                  std::int64_t, const float*,
                                                  const InterpolateGrid<float>&);
template void InterpolateCpuRange<BFloat16, float>(const BFloat16*, BFloat16*, std::int64_t,
                                                   std::int64_t, const float*,
                                                   const InterpolateGrid<float>&);

}  // namespace ops
}  // namespace constmem
