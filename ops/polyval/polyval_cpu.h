// SPDX-License-Identifier: Apache-2.0
// Polyval's CPU kernel: the core's vectorised table walk with one fused multiply-add per
// coefficient, bitwise equal to PolyvalElement (polyval_functor.h). Plain C++.
#pragma once

#include <cstdint>

#include "constmem/cpu_isa.hpp"

#pragma GCC visibility push(hidden)
namespace constmem {
namespace ops {

// y[i] for i in [begin, end). `isa` must be supported (cpu::IsaSupported).
template <class T>
void PolyvalCpuRange(const T* x, T* y, std::int64_t begin, std::int64_t end, const T* coeffs,
                     std::int64_t count, cpu::Isa isa = cpu::BestIsa());

extern template void PolyvalCpuRange<float>(const float*, float*, std::int64_t, std::int64_t,
                                            const float*, std::int64_t, cpu::Isa);
extern template void PolyvalCpuRange<double>(const double*, double*, std::int64_t, std::int64_t,
                                             const double*, std::int64_t, cpu::Isa);

}  // namespace ops
}  // namespace constmem
#pragma GCC visibility pop
