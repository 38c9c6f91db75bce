// SPDX-License-Identifier: Apache-2.0
// FirFilter's CPU kernel (see fir_filter_cpu.h). A tile of consecutive outputs stays in vector
// registers while the taps stream past; each tap is broadcast once and multiplied into every
// accumulator with the samples at that tap's offset (unaligned loads, which the CPU serves from L1
// at two per cycle: as many as it has FMA pipes).
#include "fir_filter/fir_filter_cpu.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "constmem/cpu_elementwise.hpp"

namespace constmem {
namespace ops {
namespace {

// Outputs per chunk: a chunk's samples (and the padded copy an edge chunk needs) stay in L1/L2.
constexpr std::int64_t kChunkOutputs = 2048;

// out[0, tiles * kTile) from samples[0, tiles * kTile + taps - 1).
template <class T, int kBytes, int kAccumulators>
__attribute__((always_inline)) inline void FirTiles(const T* samples, T* out, std::int64_t tiles,
                                                    const T* taps, std::int64_t tap_count) {
  using V = typename cpu::Vector<T, kBytes>::type;
  constexpr int kLanes = cpu::Vector<T, kBytes>::kLanes;
  constexpr std::int64_t kTile = std::int64_t{kLanes} * kAccumulators;
  for (std::int64_t t = 0; t < tiles; ++t) {
    const T* in = samples + t * kTile;
    V acc[kAccumulators] = {};
    for (std::int64_t j = 0; j < tap_count; ++j) {
      const V tap = V{} + taps[j];
#pragma GCC unroll 32
      for (int a = 0; a < kAccumulators; ++a) {
        V sample;
        std::memcpy(&sample, in + j + a * kLanes, kBytes);
        cpu::Fma(acc[a], sample, tap, acc[a]);
      }
    }
#pragma GCC unroll 32
    for (int a = 0; a < kAccumulators; ++a)
      std::memcpy(out + t * kTile + a * kLanes, &acc[a], kBytes);
  }
}

// One row's outputs [first, last), chunk by chunk: interior chunks read the row in place, edge
// chunks (zero padding, or a partial tile) go through a padded copy.
template <class T, int kBytes, int kAccumulators>
__attribute__((always_inline)) inline void FirRow(const T* row, T* out, const FirShape& shape,
                                                  const T* taps, std::int64_t first,
                                                  std::int64_t last, std::vector<T>& padded,
                                                  std::vector<T>& scratch) {
  constexpr std::int64_t kTile = std::int64_t{cpu::Vector<T, kBytes>::kLanes} * kAccumulators;
  for (std::int64_t begin = first; begin < last; begin += kChunkOutputs) {
    const std::int64_t count = std::min(kChunkOutputs, last - begin);
    const std::int64_t tiles = (count + kTile - 1) / kTile;
    const std::int64_t start = begin - shape.pad_left;  // first sample this chunk reads
    const std::int64_t span = tiles * kTile + shape.taps - 1;
    if (start >= 0 && start + span <= shape.length && count % kTile == 0) {
      FirTiles<T, kBytes, kAccumulators>(row + start, out + begin, tiles, taps, shape.taps);
      continue;
    }
    padded.assign(static_cast<std::size_t>(span), T(0));
    const std::int64_t from = std::max<std::int64_t>(start, 0);
    const std::int64_t to = std::min(start + span, shape.length);
    if (to > from) std::memcpy(padded.data() + (from - start), row + from, (to - from) * sizeof(T));
    scratch.resize(static_cast<std::size_t>(tiles * kTile));
    FirTiles<T, kBytes, kAccumulators>(padded.data(), scratch.data(), tiles, taps, shape.taps);
    std::memcpy(out + begin, scratch.data(), count * sizeof(T));
  }
}

template <class T, int kBytes, int kAccumulators>
__attribute__((always_inline)) inline void FirRange(const T* x, T* y, const FirShape& shape,
                                                    const T* taps, std::int64_t begin,
                                                    std::int64_t end) {
  std::vector<T> padded, scratch;
  while (begin < end) {
    const std::int64_t row = begin / shape.outputs;
    const std::int64_t first = begin % shape.outputs;
    const std::int64_t last = std::min(shape.outputs, first + (end - begin));
    FirRow<T, kBytes, kAccumulators>(x + row * shape.length, y + row * shape.outputs, shape, taps,
                                     first, last, padded, scratch);
    begin += last - first;
  }
}

template <class T>
__attribute__((flatten)) void Portable(const T* x, T* y, const FirShape& shape, const T* taps,
                                       std::int64_t begin, std::int64_t end) {
  FirRange<T, 16, 4>(x, y, shape, taps, begin, end);
}

#if CONSTMEM_CPU_X86
// 16 ymm registers: 8 accumulators and the tap; the samples are FMA memory operands.
template <class T>
CONSTMEM_TARGET_AVX2 __attribute__((flatten)) void Avx2(const T* x, T* y, const FirShape& shape,
                                                        const T* taps, std::int64_t begin,
                                                        std::int64_t end) {
  FirRange<T, 32, 8>(x, y, shape, taps, begin, end);
}

// 32 zmm registers: 12 accumulators cover the FMA latency with room to spare; more would only
// lengthen the padded edge chunks.
template <class T>
CONSTMEM_TARGET_AVX512 __attribute__((flatten)) void Avx512(const T* x, T* y, const FirShape& shape,
                                                            const T* taps, std::int64_t begin,
                                                            std::int64_t end) {
  FirRange<T, 64, 12>(x, y, shape, taps, begin, end);
}
#endif

}  // namespace

template <class T>
void FirFilterCpuRange(const T* x, T* y, const FirShape& shape, const T* taps, std::int64_t begin,
                       std::int64_t end, cpu::Isa isa) {
  if (begin >= end || shape.outputs == 0 || shape.taps < 1) return;
  switch (isa) {
#if CONSTMEM_CPU_X86
    case cpu::Isa::kAvx512:
      return Avx512(x, y, shape, taps, begin, end);
    case cpu::Isa::kAvx2:
      return Avx2(x, y, shape, taps, begin, end);
#endif
    default:
      return Portable(x, y, shape, taps, begin, end);
  }
}

template void FirFilterCpuRange<float>(const float*, float*, const FirShape&, const float*,
                                       std::int64_t, std::int64_t, cpu::Isa);
template void FirFilterCpuRange<double>(const double*, double*, const FirShape&, const double*,
                                        std::int64_t, std::int64_t, cpu::Isa);

}  // namespace ops
}  // namespace constmem
