// SPDX-License-Identifier: Apache-2.0
#include "interpolate/interpolate_cpu.h"

#include <cstdint>

namespace constmem {
namespace ops {

template <class T>
void InterpolateCpuRange(const T* x, T* y, std::int64_t begin, std::int64_t end, const T* knots,
                         const InterpolateGrid<T>& grid) {
  // A gather per element: the table stays in L1 or L2, the loop is bound by its loads.
  for (std::int64_t i = begin; i < end; ++i) y[i] = InterpolateElement(x[i], knots, grid);
}

template void InterpolateCpuRange<float>(const float*, float*, std::int64_t, std::int64_t,
                                         const float*, const InterpolateGrid<float>&);
template void InterpolateCpuRange<double>(const double*, double*, std::int64_t, std::int64_t,
                                          const double*, const InterpolateGrid<double>&);

}  // namespace ops
}  // namespace constmem
