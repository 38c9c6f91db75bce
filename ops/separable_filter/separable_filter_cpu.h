// SPDX-License-Identifier: Apache-2.0
// SeparableFilter's CPU kernel: vectorised along the rows' contiguous elements, one fused
// multiply-add per tap in tap order, bitwise equal to SeparableOutput (separable_filter_functor.h)
// and to the GPU kernel. float16 and bfloat16 images are the float32 kernel's arithmetic on the
// images converted to float32, each output rounded to nearest even. Plain C++.
#pragma once

#include <cstdint>

#include "constmem/cpu_isa.hpp"
#include "constmem/numeric.hpp"
#include "separable_filter/separable_filter_functor.h"

namespace constmem {
namespace ops {

// The work units of `shape`: bands of rows of one plane (NCHW) or one image (NHWC), in order.
// A framework shards [0, SeparableFilterCpuUnits(shape)) over its threads, each shard calling
// SeparableFilterCpuRange; SeparableFilterCpuUnitCost is a unit's rough cost in multiply-adds and
// element moves (TensorFlow's cost_per_unit).
std::int64_t SeparableFilterCpuUnits(const SeparableShape& shape);
std::int64_t SeparableFilterCpuUnitCost(const SeparableShape& shape);

// Units [begin, end) of y = SeparableFilter(x, taps): `x` and `y` hold shape.Elements() values in
// shape.layout and must not overlap (a unit reads rows of its neighbours' bands); `taps` holds
// shape.TableSize() entries (CheckSeparableArguments). In is float, double, Float16, BFloat16 or
// uint8; T is ComputeTypeOf<In>. `isa` must be supported (cpu::IsaSupported).
template <class In, class T>
void SeparableFilterCpuRange(const In* x, In* y, const SeparableShape& shape, const T* taps,
                             std::int64_t begin, std::int64_t end, cpu::Isa isa = cpu::BestIsa());

extern template void SeparableFilterCpuRange<float, float>(const float*, float*,
                                                           const SeparableShape&, const float*,
                                                           std::int64_t, std::int64_t, cpu::Isa);
extern template void SeparableFilterCpuRange<double, double>(const double*, double*,
                                                             const SeparableShape&, const double*,
                                                             std::int64_t, std::int64_t, cpu::Isa);
extern template void SeparableFilterCpuRange<Float16, float>(const Float16*, Float16*,
                                                             const SeparableShape&, const float*,
                                                             std::int64_t, std::int64_t, cpu::Isa);
extern template void SeparableFilterCpuRange<BFloat16, float>(const BFloat16*, BFloat16*,
                                                              const SeparableShape&, const float*,
                                                              std::int64_t, std::int64_t, cpu::Isa);
extern template void SeparableFilterCpuRange<std::uint8_t, float>(const std::uint8_t*,
                                                                  std::uint8_t*,
                                                                  const SeparableShape&,
                                                                  const float*, std::int64_t,
                                                                  std::int64_t, cpu::Isa);

}  // namespace ops
}  // namespace constmem
