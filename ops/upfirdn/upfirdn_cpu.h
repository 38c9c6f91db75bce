// SPDX-License-Identifier: Apache-2.0
// Upfirdn's CPU kernel: vectorised over outputs that share a phase, one fused multiply-add per term
// in the order of UpfirdnOutput (upfirdn_functor.h), bitwise equal to it and to the GPU kernel.
// float16 and bfloat16 data are computed in float: each output is the float kernel's output of the
// samples converted to float, rounded to nearest even (FromCompute). Plain C++.
#pragma once

#include <cstdint>

#include "constmem/cpu_isa.hpp"
#include "constmem/numeric.hpp"
#include "upfirdn/upfirdn_functor.h"

namespace constmem {
namespace ops {

// Outputs [begin, end) of the rows-by-outputs result, flattened row-major (the work units a
// framework shards over its threads): `x` holds shape.rows x shape.length samples, `y` shape.rows x
// shape.outputs outputs, `taps` shape.taps values; `shape` is one MakeUpfirdnShape made. `isa` must
// be supported (cpu::IsaSupported); the default is AVX2 on CPUs whose AVX-512 runs at half rate
// (cpu::BestIsaForShuffles), as for FirFilter, whose unaligned sample loads these share. T is
// float, double, Float16 or BFloat16; the taps are of its compute type (ComputeTypeOf<T>).
template <class T>
void UpfirdnCpuRange(const T* x, T* y, const UpfirdnShape& shape, const ComputeTypeOf<T>* taps,
                     std::int64_t begin, std::int64_t end,
                     cpu::Isa isa = cpu::BestIsaForShuffles());

extern template void UpfirdnCpuRange<float>(const float*, float*, const UpfirdnShape&, const float*,
                                            std::int64_t, std::int64_t, cpu::Isa);
extern template void UpfirdnCpuRange<double>(const double*, double*, const UpfirdnShape&,
                                             const double*, std::int64_t, std::int64_t, cpu::Isa);
extern template void UpfirdnCpuRange<Float16>(const Float16*, Float16*, const UpfirdnShape&,
                                              const float*, std::int64_t, std::int64_t, cpu::Isa);
extern template void UpfirdnCpuRange<BFloat16>(const BFloat16*, BFloat16*, const UpfirdnShape&,
                                               const float*, std::int64_t, std::int64_t, cpu::Isa);

}  // namespace ops
}  // namespace constmem
