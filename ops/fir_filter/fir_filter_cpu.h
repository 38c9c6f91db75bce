// SPDX-License-Identifier: Apache-2.0
// FirFilter's CPU kernel: vectorised over consecutive outputs, one fused multiply-add per tap in
// tap order, bitwise equal to FirOutput (fir_filter_functor.h). float16 and bfloat16 data are
// computed in float: each output is the float kernel's output of the samples converted to float,
// rounded to nearest even (FromCompute). Plain C++.
#pragma once

#include <cstdint>

#include "constmem/cpu_isa.hpp"
#include "constmem/numeric.hpp"
#include "fir_filter/fir_filter_functor.h"

#pragma GCC visibility push(hidden)
namespace constmem {
namespace ops {

// Outputs [begin, end) of the rows-by-outputs result, flattened row-major: `x` holds
// shape.rows x shape.length samples, `y` shape.rows x shape.outputs outputs. `isa` must be
// supported (cpu::IsaSupported); the default is AVX2 on CPUs whose AVX-512 runs at half rate
// (cpu::BestIsaForShuffles), where the 256-bit kernels are 10-30% faster. T is float, double,
// Float16 or BFloat16; the taps are of its compute type (ComputeTypeOf<T>).
template <class T>
void FirFilterCpuRange(const T* x, T* y, const FirShape& shape, const ComputeTypeOf<T>* taps,
                       std::int64_t begin, std::int64_t end,
                       cpu::Isa isa = cpu::BestIsaForShuffles());

extern template void FirFilterCpuRange<float>(const float*, float*, const FirShape&, const float*,
                                              std::int64_t, std::int64_t, cpu::Isa);
extern template void FirFilterCpuRange<double>(const double*, double*, const FirShape&,
                                               const double*, std::int64_t, std::int64_t, cpu::Isa);
extern template void FirFilterCpuRange<Float16>(const Float16*, Float16*, const FirShape&,
                                                const float*, std::int64_t, std::int64_t, cpu::Isa);
extern template void FirFilterCpuRange<BFloat16>(const BFloat16*, BFloat16*, const FirShape&,
                                                 const float*, std::int64_t, std::int64_t,
                                                 cpu::Isa);

}  // namespace ops
}  // namespace constmem
#pragma GCC visibility pop
