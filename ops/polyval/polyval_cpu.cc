// SPDX-License-Identifier: Apache-2.0
#include "polyval/polyval_cpu.h"

#include <cstdint>

#include "constmem/cpu_elementwise.hpp"

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

template <class T>
void PolyvalCpuRange(const T* x, T* y, std::int64_t begin, std::int64_t end, const T* coeffs,
                     std::int64_t count, cpu::Isa isa) {
  cpu::ElementwiseTableCpu<PolyvalCpuStep>(x, y, begin, end, coeffs, count, isa);
}

template void PolyvalCpuRange<float>(const float*, float*, std::int64_t, std::int64_t, const float*,
                                     std::int64_t, cpu::Isa);
template void PolyvalCpuRange<double>(const double*, double*, std::int64_t, std::int64_t,
                                      const double*, std::int64_t, cpu::Isa);

}  // namespace ops
}  // namespace constmem
