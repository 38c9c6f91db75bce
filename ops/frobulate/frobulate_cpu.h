// SPDX-License-Identifier: Apache-2.0
// Frobulate's CPU kernel: vectorised and register-tiled, compiled for several instruction sets and
// picked at run time. Plain C++: no TensorFlow and no CUDA include.
//
// Each element still gets its additions one by one in table order, so the result is bitwise equal
// to FrobulateElement (frobulate_functor.h) under any floating-point environment: the speed comes
// from keeping a tile of elements in vector registers while the table streams past, not from
// reordering the sum.
#pragma once

#include <cstdint>

#include "constmem/cpu_isa.hpp"

#pragma GCC visibility push(hidden)
namespace constmem {
namespace ops {

// out[i] for i in [begin, end), from a table already converted to T (convert once per call, not
// once per range). `isa` must be supported (cpu::IsaSupported); cpu::BestIsa() is the default.
template <class T>
void FrobulateCpuRange(const T* data, T* out, std::int64_t begin, std::int64_t end, const T* table,
                       std::int64_t table_size, cpu::Isa isa = cpu::BestIsa());

extern template void FrobulateCpuRange<float>(const float*, float*, std::int64_t, std::int64_t,
                                              const float*, std::int64_t, cpu::Isa);
extern template void FrobulateCpuRange<double>(const double*, double*, std::int64_t, std::int64_t,
                                               const double*, std::int64_t, cpu::Isa);

}  // namespace ops
}  // namespace constmem
#pragma GCC visibility pop
