// SPDX-License-Identifier: Apache-2.0
// Polyval's CPU kernel: the core's vectorised table walk with one fused multiply-add per
// coefficient, bitwise equal to PolyvalElement (polyval_functor.h). Plain C++.
#pragma once

#include <cstdint>

#include "constmem/cpu_isa.hpp"
#include "constmem/numeric.hpp"

#pragma GCC visibility push(hidden)
namespace constmem {
namespace ops {

// y[i] for i in [begin, end), computed in T (ComputeTypeOf<In>): float16 and bfloat16 data is
// read as float and each result rounded to nearest even, as the float kernel's result cast to In.
// `isa` must be supported (cpu::IsaSupported).
template <class In, class T = ComputeTypeOf<In>>
void PolyvalCpuRange(const In* x, In* y, std::int64_t begin, std::int64_t end, const T* coeffs,
                     std::int64_t count, cpu::Isa isa = cpu::BestIsa());

extern template void PolyvalCpuRange<float, float>(const float*, float*, std::int64_t, std::int64_t,
                                                   const float*, std::int64_t, cpu::Isa);
extern template void PolyvalCpuRange<double, double>(const double*, double*, std::int64_t,
                                                     std::int64_t, const double*, std::int64_t,
                                                     cpu::Isa);
extern template void PolyvalCpuRange<Float16, float>(const Float16*, Float16*, std::int64_t,
                                                     std::int64_t, const float*, std::int64_t,
                                                     cpu::Isa);
extern template void PolyvalCpuRange<BFloat16, float>(const BFloat16*, BFloat16*, std::int64_t,
                                                      std::int64_t, const float*, std::int64_t,
                                                      cpu::Isa);

}  // namespace ops
}  // namespace constmem
#pragma GCC visibility pop
