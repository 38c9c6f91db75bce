// SPDX-License-Identifier: Apache-2.0
// Frobulate's CPU kernel (see frobulate_cpu.h): the core's elementwise table walk with a running
// sum.
#include "frobulate/frobulate_cpu.h"

#include <cstdint>

#include "constmem/cpu_elementwise.hpp"

namespace constmem {
namespace ops {
namespace {

struct FrobulateCpuStep {
  template <class V>
  struct State {
    V y;  // the running sum
  };
  // Two adds per cycle at four cycles of latency need eight independent sums; AVX-512 keeps 24 of
  // its 32 registers busy (16 left the adders idle a third of the time at 100 entries), AVX2 12 of
  // 16.
  static constexpr int kAccumulators[] = {8, 12, 24};
  template <class V>
  static void Start(State<V>& state, const V& x, const V& first) {
    state.y = x + first;
  }
  template <class V>
  static void Step(State<V>& state, const V& entry) {
    state.y += entry;
  }
};

}  // namespace

template <class T>
void FrobulateCpuRange(const T* data, T* out, std::int64_t begin, std::int64_t end, const T* table,
                       std::int64_t table_size, cpu::Isa isa) {
  cpu::ElementwiseTableCpu<FrobulateCpuStep>(data, out, begin, end, table, table_size, isa);
}

template void FrobulateCpuRange<float>(const float*, float*, std::int64_t, std::int64_t,
                                       const float*, std::int64_t, cpu::Isa);
template void FrobulateCpuRange<double>(const double*, double*, std::int64_t, std::int64_t,
                                        const double*, std::int64_t, cpu::Isa);

}  // namespace ops
}  // namespace constmem
