// SPDX-License-Identifier: Apache-2.0
#include "polyval/polyval_cpu.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "constmem/cpu_elementwise.hpp"
#include "constmem/numeric.hpp"

namespace constmem {
namespace ops {
namespace {

struct PolyvalCpuStep {
  template <class V>
  struct State {
    V x;
    V y;
  };
  // Two registers per accumulator. Two FMA pipes at four cycles of latency need eight in flight;
  // AVX-512 keeps 14 (28 of 32 registers). AVX2 keeps 10 with 16 registers: the x of some lives
  // on the stack and is a memory operand of its FMA, a load rather than an FMA slot (7 with every
  // x in a register left the FMA pipes an eighth idle: 86% of the ceiling on AMD's Zen).
  static constexpr int kAccumulators[] = {6, 10, 14};
  template <class V>
  static void Start(State<V>& state, const V& x, const V& first) {
    state.x = x;
    state.y = first;
  }
  template <class V>
  static void Step(State<V>& state, const V& coeff) {
    cpu::Fma(state.y, state.y, state.x, coeff);
  }
};

}  // namespace

template <class In, class T>
void PolyvalCpuRange(const In* x, In* y, std::int64_t begin, std::int64_t end, const T* coeffs,
                     std::int64_t count, cpu::Isa isa) {
  if constexpr (std::is_same<In, T>::value) {
    cpu::ElementwiseTableCpu<PolyvalCpuStep>(x, y, begin, end, coeffs, count, isa);
  } else {
    // Chunks converted to T in a buffer that stays in L1, walked by T's kernel in place (it reads
    // a tile whole before it writes it) and rounded back: T's operations, element by element. A
    // chunk is a whole number of every instruction set's tiles (24, 80 and 224 elements).
    constexpr std::int64_t kChunk = 3360;
    static_assert(kChunk % (4 * PolyvalCpuStep::kAccumulators[0]) == 0 &&
                      kChunk % (8 * PolyvalCpuStep::kAccumulators[1]) == 0 &&
                      kChunk % (16 * PolyvalCpuStep::kAccumulators[2]) == 0,
                  "whole tiles of float vectors of 16, 32 and 64 bytes");
    alignas(64) T chunk[kChunk];
    for (std::int64_t i = begin; i < end; i += kChunk) {
      const std::int64_t n = std::min(kChunk, end - i);
      for (std::int64_t k = 0; k < n; ++k) chunk[k] = ToCompute<T>(x[i + k]);
      cpu::ElementwiseTableCpu<PolyvalCpuStep>(chunk, chunk, 0, n, coeffs, count, isa);
      for (std::int64_t k = 0; k < n; ++k) y[i + k] = FromCompute<In>(chunk[k]);
    }
  }
}

template void PolyvalCpuRange<float, float>(const float*, float*, std::int64_t, std::int64_t,
                                            const float*, std::int64_t, cpu::Isa);
template void PolyvalCpuRange<double, double>(const double*, double*, std::int64_t, std::int64_t,
                                              const double*, std::int64_t, cpu::Isa);
template void PolyvalCpuRange<Float16, float>(const Float16*, Float16*, std::int64_t, std::int64_t,
                                              const float*, std::int64_t, cpu::Isa);
template void PolyvalCpuRange<BFloat16, float>(const BFloat16*, BFloat16*, std::int64_t,
                                               std::int64_t, const float*, std::int64_t, cpu::Isa);

}  // namespace ops
}  // namespace constmem
