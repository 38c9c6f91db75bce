// SPDX-License-Identifier: Apache-2.0
// Upfirdn's CPU kernel (see upfirdn_cpu.h). Outputs of one phase class c (outputs c + s * P) share
// their taps and have bases Q samples apart, so a vector of them is one broadcast tap times the
// samples b - m + l * Q of its lanes l. The row is rearranged, a chunk at a time, into Q streams
// (stream v holds the samples origin + v + j * Q), in which those samples lie next to each other:
// every term is one unaligned vector load, one broadcast and one FMA, as in FirFilter's kernel.
// Outputs whose terms reach past either end of the row, and a class's last few outputs, take the
// scalar definition, which runs the same operations.
#include "upfirdn/upfirdn_cpu.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "constmem/cpu_convert.hpp"
#include "constmem/cpu_elementwise.hpp"

namespace constmem {
namespace ops {
namespace {

// Floor and ceiling of a / b for b > 0 and any a.
inline std::int64_t FloorDiv(std::int64_t a, std::int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
inline std::int64_t CeilDiv(std::int64_t a, std::int64_t b) { return -FloorDiv(-a, b); }

// Samples per chunk of the rearranged row: the streams stay in L2 while every class reads them.
constexpr std::int64_t kChunkSamples = 1 << 14;
// The most samples a chunk rearranges whatever Q (4 MiB of float32): a chunk holds at least a
// vector of outputs of each class, Q samples apart, so Q above this over the lanes runs scalar.
constexpr std::int64_t kScratchSamples = 1 << 20;

// Where a chunk's samples are: sample e is streams[v * stream_length + j] for
// e - origin = j * Q + v (for Q = 1, the row itself).
template <class T>
struct Streams {
  const T* data;
  std::int64_t stream_length;
  std::int64_t origin;
  std::int64_t q;
};

// `tiles` tiles of kAcc vectors of one class's outputs, every output inside the row: the first's
// base is `base`, the outputs of a tile go to out[0], out[stride], ... (stride P).
template <class T, int kBytes, int kAcc>
__attribute__((always_inline)) inline void ClassTiles(const Streams<T>& streams, const T* taps,
                                                      std::int64_t up, std::int64_t terms,
                                                      std::int64_t base, std::int64_t tiles, T* out,
                                                      std::int64_t stride) {
  using V = typename cpu::Vector<T, kBytes>::type;
  constexpr int kLanes = cpu::Vector<T, kBytes>::kLanes;
  constexpr std::int64_t kTile = std::int64_t{kLanes} * kAcc;
  const std::int64_t q = streams.q;
  for (std::int64_t t = 0; t < tiles; ++t) {
    V acc[kAcc] = {};
    const std::int64_t d = base + t * kTile * q - streams.origin;  // the first lane's b - origin
    std::int64_t v = d % q, j = d / q;
    const T* tap = taps;
    for (std::int64_t m = 0; m < terms; ++m, tap += up) {
      V h;
      cpu::Broadcast(h, tap);
      const T* samples = streams.data + v * streams.stream_length + j;
#pragma GCC unroll 16
      for (int a = 0; a < kAcc; ++a) {
        V sample;
        std::memcpy(&sample, samples + a * kLanes, kBytes);
        cpu::Fma(acc[a], sample, h, acc[a]);
      }
      // The next term's samples: one earlier (b - m - 1).
      if (v == 0) {
        v = q - 1;
        --j;
      } else {
        --v;
      }
    }
    T* tile_out = out + t * kTile * stride;
    if (stride == 1) {
#pragma GCC unroll 16
      for (int a = 0; a < kAcc; ++a) std::memcpy(tile_out + a * kLanes, &acc[a], kBytes);
    } else {
      T lanes[kTile];
#pragma GCC unroll 16
      for (int a = 0; a < kAcc; ++a) std::memcpy(lanes + a * kLanes, &acc[a], kBytes);
      for (std::int64_t l = 0; l < kTile; ++l) tile_out[l * stride] = lanes[l];
    }
  }
}

// One row's outputs [first, last).
template <class T, int kBytes, int kAcc>
__attribute__((always_inline)) inline void UpfirdnRow(const T* row, T* out,
                                                      const UpfirdnShape& shape, const T* taps,
                                                      std::int64_t first, std::int64_t last,
                                                      std::vector<T>& scratch) {
  constexpr int kLanes = cpu::Vector<T, kBytes>::kLanes;
  constexpr std::int64_t kTile = std::int64_t{kLanes} * kAcc;
  const UpfirdnPhases phases = MakeUpfirdnPhases(shape.up, shape.down);
  const std::int64_t P = phases.period, Q = phases.stride;
  const std::int64_t n = shape.length, k = shape.taps, up = shape.up;
  const std::int64_t most_terms = (k + up - 1) / up;
  auto scalar = [&](std::int64_t c, std::int64_t s_begin, std::int64_t s_end) {
    for (std::int64_t s = s_begin; s < s_end; ++s) {
      out[c + s * P] = UpfirdnOutput(row, shape, taps, c + s * P);
    }
  };
  // Fewer outputs than a vector of each class, or classes whose samples lie too far apart to
  // rearrange: output by output (the class loop below costs P steps a chunk, the rearranged
  // chunk about Q samples an output of each class).
  if (last - first < P * kLanes || Q > kScratchSamples / kLanes) {
    for (std::int64_t i = first; i < last; ++i) out[i] = UpfirdnOutput(row, shape, taps, i);
    return;
  }
  const std::int64_t s_first = first / P, s_last = CeilDiv(last, P);
  // Chunks of s (outputs of every class): whole rows for Q = 1, which read the row in place;
  // else at least a vector's, at most kScratchSamples samples where Q is large.
  const std::int64_t chunk =
      Q == 1 ? s_last - s_first
             : std::max(kChunkSamples / Q, std::min<std::int64_t>(4 * kTile, kScratchSamples / Q));
  for (std::int64_t sa = s_first; sa < s_last; sa += chunk) {
    const std::int64_t sb = std::min(s_last, sa + chunk);
    Streams<T> streams{row, n, 0, Q};
    if (Q > 1) {
      // Samples [lo, hi] serve the chunk's outputs inside the row (bases below sb * Q).
      const std::int64_t lo = sa * Q - (most_terms - 1), hi = sb * Q - 1;
      streams.origin = FloorDiv(lo, Q) * Q;
      streams.stream_length = (hi - streams.origin) / Q + 1;
      scratch.resize(static_cast<std::size_t>(Q * streams.stream_length));
      const std::int64_t from = std::max<std::int64_t>(lo, 0), to = std::min(hi, n - 1);
      for (std::int64_t v = 0; v < Q && from <= to; ++v) {
        // The first sample at or after `from` of stream v.
        const std::int64_t j0 = CeilDiv(from - streams.origin - v, Q);
        T* stream = scratch.data() + v * streams.stream_length;
        for (std::int64_t j = j0, e = streams.origin + v + j0 * Q; e <= to; ++j, e += Q) {
          stream[j] = row[e];
        }
      }
      streams.data = scratch.data();
    }
    for (std::int64_t c = 0; c < P; ++c) {
      // This class's outputs c + s * P inside [first, last) and the chunk.
      const std::int64_t s_lo = std::max(sa, CeilDiv(first - c, P));
      const std::int64_t s_hi = std::min(sb, CeilDiv(last - c, P));
      if (s_lo >= s_hi) continue;
      const std::int64_t p = c * shape.down % up, base = c * shape.down / up;
      const std::int64_t terms = p < k ? (k - 1 - p) / up + 1 : 0;
      // Inside the row: every term's sample exists (base + s * Q in [terms - 1, n - 1]).
      const std::int64_t in_lo = std::max(s_lo, CeilDiv(terms - 1 - base, Q));
      const std::int64_t in_hi = std::min(s_hi, FloorDiv(n - 1 - base, Q) + 1);
      if (in_lo >= in_hi) {
        scalar(c, s_lo, s_hi);
        continue;
      }
      scalar(c, s_lo, in_lo);
      std::int64_t s = in_lo;
      const std::int64_t tiles = (in_hi - s) / kTile;
      ClassTiles<T, kBytes, kAcc>(streams, taps + p, up, terms, base + s * Q, tiles,
                                  out + c + s * P, P);
      s += tiles * kTile;
      const std::int64_t vectors = (in_hi - s) / kLanes;
      ClassTiles<T, kBytes, 1>(streams, taps + p, up, terms, base + s * Q, vectors, out + c + s * P,
                               P);
      s += vectors * kLanes;
      scalar(c, s, s_hi);
    }
  }
}

template <class T, int kBytes, int kAcc>
__attribute__((always_inline)) inline void UpfirdnRange(const T* x, T* y, const UpfirdnShape& shape,
                                                        const T* taps, std::int64_t begin,
                                                        std::int64_t end) {
  std::vector<T> scratch;
  while (begin < end) {
    const std::int64_t row = begin / shape.outputs;
    const std::int64_t first = begin % shape.outputs;
    const std::int64_t last = std::min(shape.outputs, first + (end - begin));
    UpfirdnRow<T, kBytes, kAcc>(x + row * shape.length, y + row * shape.outputs, shape, taps, first,
                                last, scratch);
    begin += last - first;
  }
}

template <class T>
__attribute__((flatten)) void Portable(const T* x, T* y, const UpfirdnShape& shape, const T* taps,
                                       std::int64_t begin, std::int64_t end) {
  UpfirdnRange<T, 16, 4>(x, y, shape, taps, begin, end);
}

#if CONSTMEM_CPU_X86
// 16 ymm registers: 8 accumulators, the tap, the samples as FMA memory operands.
template <class T>
CONSTMEM_TARGET_AVX2 __attribute__((flatten)) void Avx2(const T* x, T* y, const UpfirdnShape& shape,
                                                        const T* taps, std::int64_t begin,
                                                        std::int64_t end) {
  UpfirdnRange<T, 32, 8>(x, y, shape, taps, begin, end);
}

// 32 zmm registers: 12 accumulators cover the FMA latency, as in FirFilter's kernel.
template <class T>
CONSTMEM_TARGET_AVX512 __attribute__((flatten)) void Avx512(const T* x, T* y,
                                                            const UpfirdnShape& shape,
                                                            const T* taps, std::int64_t begin,
                                                            std::int64_t end) {
  UpfirdnRange<T, 64, 12>(x, y, shape, taps, begin, end);
}
#endif

using cpu::NarrowRow;
using cpu::WidenRow;

// 16-bit data: each chunk of a row's outputs is the float kernel's over the chunk's samples
// converted to float, then rounded (FromCompute). A chunk starts at a whole period of outputs
// (output s * P has phase 0 and base s * Q) and its samples a halo of whole periods before its
// first output's, so that the chunk's outputs, in a row of those samples, meet exactly the terms
// they meet in the whole row: the same fused multiply-adds in the same order.
template <class T>
void NarrowRange(const T* x, T* y, const UpfirdnShape& shape, const float* taps, std::int64_t begin,
                 std::int64_t end, cpu::Isa isa) {
  const UpfirdnPhases phases = MakeUpfirdnPhases(shape.up, shape.down);
  const std::int64_t P = phases.period, Q = phases.stride;
  const std::int64_t n = shape.length;
  const std::int64_t halo_periods = CeilDiv((shape.taps + shape.up - 1) / shape.up - 1, Q);
  // Periods a chunk: about 64 Ki samples, at least a vector of each class at every ISA.
  const std::int64_t chunk_periods = std::max<std::int64_t>(64, (std::int64_t{1} << 16) / Q);
  std::vector<float> samples, outputs;
  while (begin < end) {
    const std::int64_t row = begin / shape.outputs;
    const std::int64_t first = begin % shape.outputs;
    const std::int64_t last = std::min(shape.outputs, first + (end - begin));
    const T* const row_x = x + row * n;
    T* const row_y = y + row * shape.outputs;
    for (std::int64_t i0 = first; i0 < last;) {
      const std::int64_t s = i0 / P;
      const std::int64_t i1 = std::min(last, (s + chunk_periods) * P);
      const std::int64_t s_lo = std::max<std::int64_t>(0, s - halo_periods);
      const std::int64_t from = s_lo * Q;  // the chunk row's first sample
      const std::int64_t to = std::min(n, (i1 - 1) * shape.down / shape.up + 1);
      if (from >= to) {
        // Every term lies past the row's end.
        for (std::int64_t i = i0; i < i1; ++i) row_y[i] = FromCompute<T>(0.0f);
        i0 = i1;
        continue;
      }
      UpfirdnShape chunk = shape;
      chunk.rows = 1;
      chunk.length = to - from;
      chunk.outputs = i1 - s_lo * P;
      samples.resize(static_cast<std::size_t>(chunk.length));
      WidenRow(row_x + from, samples.data(), chunk.length, isa);
      outputs.resize(static_cast<std::size_t>(chunk.outputs));
      UpfirdnCpuRange(samples.data(), outputs.data(), chunk, taps, i0 - s_lo * P, chunk.outputs,
                      isa);
      NarrowRow(outputs.data() + (i0 - s_lo * P), row_y + i0, i1 - i0, isa);
      i0 = i1;
    }
    begin += last - first;
  }
}

}  // namespace

template <class T>
void UpfirdnCpuRange(const T* x, T* y, const UpfirdnShape& shape, const ComputeTypeOf<T>* taps,
                     std::int64_t begin, std::int64_t end, cpu::Isa isa) {
  if (begin >= end || shape.outputs == 0 || shape.taps < 1) return;
  if constexpr (!std::is_same<T, ComputeTypeOf<T>>::value) {
    NarrowRange(x, y, shape, taps, begin, end, isa);
  } else {
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
}

template void UpfirdnCpuRange<float>(const float*, float*, const UpfirdnShape&, const float*,
                                     std::int64_t, std::int64_t, cpu::Isa);
template void UpfirdnCpuRange<double>(const double*, double*, const UpfirdnShape&, const double*,
                                      std::int64_t, std::int64_t, cpu::Isa);
template void UpfirdnCpuRange<Float16>(const Float16*, Float16*, const UpfirdnShape&, const float*,
                                       std::int64_t, std::int64_t, cpu::Isa);
template void UpfirdnCpuRange<BFloat16>(const BFloat16*, BFloat16*, const UpfirdnShape&,
                                        const float*, std::int64_t, std::int64_t, cpu::Isa);

}  // namespace ops
}  // namespace constmem
