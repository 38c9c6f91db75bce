// SPDX-License-Identifier: Apache-2.0
// FirFilter's CPU kernel (see fir_filter_cpu.h). A tile of consecutive outputs stays in vector
// registers while the taps stream past; each tap is broadcast once and multiplied into every
// accumulator with the samples at that tap's offset (unaligned loads, which the CPU serves from L1
// at two per cycle: as many as it has FMA pipes).
#include "fir_filter/fir_filter_cpu.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

#include "constmem/cpu_convert.hpp"
#include "constmem/cpu_elementwise.hpp"

namespace constmem {
namespace ops {
namespace {

// Outputs per chunk: a chunk's samples (and the padded copy an edge chunk needs) stay in L1/L2.
constexpr std::int64_t kChunkOutputs = 2048;
// The longest filter the transposed float kernels take: each chunk of their outputs copies its
// k - 1 samples of halo for every row of a group, which beyond this outgrows L2 (and takes
// 64 MiB a thread at 2^20 taps). Longer filters take the row kernels, whose chunks read the row
// in place.
constexpr std::int64_t kGroupedMaxTaps = 2048;

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
      V tap;
      cpu::Broadcast(tap, taps + j);
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

// Groups of float rows, transposed: each vector holds one sample position of as many rows as it
// has lanes (16 under AVX-512, 8 under AVX2), so the sample vector a tap needs is one aligned
// load (no cache-line split) and every tap still reaches every output in order. The samples go
// through a transposed, zero-padded copy per chunk of outputs, the results through a transposed
// store. A policy per instruction set says the vector, the transpose and the register blocking.

// GCC 12 warns that the AVX-512 intrinsics' own undefined-register helpers may be used
// uninitialised once they are inlined here; they are not (each is fully overwritten).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// A 16 x 16 block of floats transposed in registers (unpack within 128-bit lanes, then shuffle
// the lanes): from 16 rows of 16 positions to 16 positions of 16 rows, or back. Rows are read
// from `in` with stride `in_stride` and written to `out` with stride `out_stride` (in floats).
template <bool kStream = false>
CONSTMEM_TARGET_AVX512 inline void Transpose16x16(const float* in, std::int64_t in_stride,
                                                  float* out, std::int64_t out_stride) {
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(in + i * in_stride);
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
    t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
    t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
    t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
  }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
  }
  for (int i = 0; i < 16; ++i) {
    if constexpr (kStream) {
      _mm512_stream_ps(out + i * out_stride, r[i]);  // 64-byte aligned: checked by the caller
    } else {
      _mm512_storeu_ps(out + i * out_stride, r[i]);
    }
  }
}

// The same for an 8 x 8 block under AVX2 (unpack, shuffle within 128-bit lanes, then swap the
// lanes).
CONSTMEM_TARGET_AVX2 inline void Transpose8x8(const float* in, std::int64_t in_stride, float* out,
                                              std::int64_t out_stride) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(in + i * in_stride);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x20);
    t[i + 4] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x31);
  }
  for (int i = 0; i < 8; ++i) _mm256_storeu_ps(out + i * out_stride, t[i]);
}

// AVX-512: 16 accumulators and four taps a pass (21 of 32 registers): 20 sample loads and 4
// broadcasts per 64 FMAs. 1.1-1.2x eight taps through a window of 19 samples into 12
// accumulators on a Xeon, 1.1x on Zen 4 (alternating runs).
struct GroupAvx512 {
  using V = cpu::Vector<float, 64>::type;
  static constexpr int kRows = 16;
  static constexpr int kAccumulators = 16;
  static constexpr int kTapsPerPass = 4;
  // Outputs per chunk: its transposed samples and results (37 KB at 63 taps) fill L1, so the next
  // chunk's samples are prefetched to L2.
  static constexpr std::int64_t kChunkOutputs = 16 * 16;
  static constexpr int kPrefetchLocality = 1;
  // Each transposed store is a whole 64-byte line of a row: streamed around the cache.
  static constexpr bool kStreamingStores = true;
  CONSTMEM_TARGET_AVX512 static void Transpose(const float* in, std::int64_t in_stride, float* out,
                                               std::int64_t out_stride) {
    Transpose16x16(in, in_stride, out, out_stride);
  }
  CONSTMEM_TARGET_AVX512 static void TransposeStreaming(const float* in, std::int64_t in_stride,
                                                        float* out, std::int64_t out_stride) {
    Transpose16x16<true>(in, in_stride, out, out_stride);
  }
};

// AVX2: 10 accumulators and two taps a pass in 16 registers (11 sample loads and 2 broadcasts per
// 20 FMAs; AMD's Zen cores load two 256-bit vectors a cycle): 12 accumulators spill, 3 taps a
// pass or the samples as memory operands of the FMAs are 5-10% slower on Zen 4.
struct GroupAvx2 {
  using V = cpu::Vector<float, 32>::type;
  static constexpr int kRows = 8;
  static constexpr int kAccumulators = 10;
  static constexpr int kTapsPerPass = 2;
  // 320 outputs a chunk (22 KB of transposed samples and results, within a 32 KB L1) and the next
  // chunk's samples prefetched to L1: 8-10% faster on Zen 4 than 160 outputs prefetched to L2
  // (fewer halo samples transposed twice).
  static constexpr std::int64_t kChunkOutputs = 32 * 10;
  static constexpr int kPrefetchLocality = 3;
  // Plain stores: a streamed 8x8 block would write half a line of each row, and an Intel core's
  // write-combining buffers then flush partial lines (3-4x slower on a Xeon; no faster on Zen 4).
  static constexpr bool kStreamingStores = false;
  CONSTMEM_TARGET_AVX2 static void Transpose(const float* in, std::int64_t in_stride, float* out,
                                             std::int64_t out_stride) {
    Transpose8x8(in, in_stride, out, out_stride);
  }
};

// Its scratch: float storage on 64-byte boundaries (wide vectors are not kept in a std::vector:
// its code is compiled for baseline x86-64 and would pass them by value).
struct AlignedFloats {
  float* data = nullptr;
  std::size_t capacity = 0;
  ~AlignedFloats() { std::free(data); }
  float* Reserve(std::size_t n) {
    if (n > capacity) {
      std::free(data);
      capacity = (n + 15) / 16 * 16;
      data = static_cast<float*>(std::aligned_alloc(64, capacity * sizeof(float)));
    }
    return data;
  }
};

// One group of G::kRows rows, every output.
template <class G>
__attribute__((always_inline)) inline void RowGroup(const float* x, float* y, const FirShape& shape,
                                                    const float* taps, std::int64_t first_row,
                                                    AlignedFloats& scratch) {
  using V = typename G::V;
  constexpr int kRows = G::kRows, kAcc = G::kAccumulators, kTaps = G::kTapsPerPass;
  constexpr std::int64_t kChunk = G::kChunkOutputs;
  static_assert(kChunk % kAcc == 0, "a chunk is whole tiles");
  const std::int64_t k = shape.taps;
  for (std::int64_t begin = 0; begin < shape.outputs; begin += kChunk) {
    const std::int64_t count = std::min(kChunk, shape.outputs - begin);
    const std::int64_t tiles = (count + kAcc - 1) / kAcc;
    const std::int64_t span = tiles * kAcc + k - 1;
    float* transposed = scratch.Reserve(static_cast<std::size_t>((span + tiles * kAcc) * kRows));
    float* results = transposed + span * kRows;  // outputs by position, kRows rows each
    const std::int64_t start = begin - shape.pad_left;
    const std::int64_t from = std::max<std::int64_t>(start, 0);
    const std::int64_t to = std::min(start + span, shape.length);
    // Zeros only where the chunk reaches past either end of the rows.
    std::memset(transposed, 0, (from - start) * kRows * sizeof(float));
    std::memset(transposed + (to - start) * kRows, 0, (start + span - to) * kRows * sizeof(float));
    const float* rows = x + first_row * shape.length;
    std::int64_t s = from;
    for (; s + kRows <= to; s += kRows) {
      G::Transpose(rows + s, shape.length, transposed + (s - start) * kRows, kRows);
    }
    if (s < to && to - from >= kRows) {  // the last positions: a block that overlaps the one before
      G::Transpose(rows + to - kRows, shape.length, transposed + (to - kRows - start) * kRows,
                   kRows);
      s = to;
    }
    for (int r = 0; r < kRows; ++r) {
      for (std::int64_t q = s; q < to; ++q) {
        transposed[(q - start) * kRows + r] = rows[r * shape.length + q];
      }
    }
    // The next chunk's samples (kRows rows, 64 bytes a line), requested a share per tile while
    // this chunk computes: that many row streams are more than the hardware prefetchers follow.
    const std::int64_t next = start + kChunk;
    const std::int64_t lines_per_row = (span + 15) / 16;
    const std::int64_t lines_per_tile = (kRows * lines_per_row + tiles - 1) / tiles;
    std::int64_t prefetch_row = 0, prefetch_line = 0;  // a cursor: no division per line
    // Back to rows: each block of kRows outputs transposed as soon as its tiles are done, so that
    // the stores stream out while later tiles compute; the rest one by one at the end.
    float* out_rows = y + first_row * shape.outputs + begin;
    std::int64_t o = 0;
    // Streaming stores write the outputs around the cache (no read of the lines first) where
    // every row of the block starts on a vector boundary.
    const bool stream = G::kStreamingStores &&
                        reinterpret_cast<std::uintptr_t>(out_rows) % sizeof(V) == 0 &&
                        shape.outputs % kRows == 0;
    auto store_blocks = [&](std::int64_t done) {
      for (; o + kRows <= done; o += kRows) {
        if constexpr (G::kStreamingStores) {
          if (stream) {
            G::TransposeStreaming(results + o * kRows, kRows, out_rows + o, shape.outputs);
            continue;
          }
        }
        G::Transpose(results + o * kRows, kRows, out_rows + o, shape.outputs);
      }
    };
    for (std::int64_t t = 0; t < tiles; ++t) {
      for (std::int64_t l = 0; l < lines_per_tile && prefetch_row < kRows; ++l) {
        const std::int64_t at = next + prefetch_line * 16;
        if (at >= 0 && at < shape.length)
          __builtin_prefetch(rows + prefetch_row * shape.length + at, 0, G::kPrefetchLocality);
        if (++prefetch_line == lines_per_row) {
          prefetch_line = 0;
          ++prefetch_row;
        }
      }
      const float* in = transposed + t * kAcc * kRows;
      V acc[kAcc] = {};
      std::int64_t j = 0;
      {
        // kTaps taps a pass, the samples in order: each sample is loaded once and feeds the
        // accumulators that need it for each of the taps (accumulator a takes sample a + jj for
        // tap jj, after sample a + jj - 1 for tap jj - 1), so only the accumulators, the taps and
        // one sample need registers.
        constexpr int kT = kTaps;
        for (; j + kT <= k; j += kT) {
          V tap[kT];
#pragma GCC unroll 8
          for (int jj = 0; jj < kT; ++jj) cpu::Broadcast(tap[jj], taps + j + jj);
          const float* samples = in + j * kRows;
          asm("" : "+r"(samples));
#pragma GCC unroll 32
          for (int i = 0; i < kAcc + kT - 1; ++i) {
            V sample;
            std::memcpy(&sample, samples + i * kRows, sizeof(V));
            asm("" : "+v"(sample));  // one load into a register, not one folded into each FMA
#pragma GCC unroll 8
            for (int jj = 0; jj < kT; ++jj) {
              if (i - jj >= 0 && i - jj < kAcc) cpu::Fma(acc[i - jj], sample, tap[jj], acc[i - jj]);
            }
          }
        }
      }
      for (; j < k; ++j) {
        V tap;
        cpu::Broadcast(tap, taps + j);
        const float* samples = in + j * kRows;
        // Opaque to the compiler: otherwise it keeps the sliding window of samples in registers
        // and shifts it with a register move per FMA, which takes an FMA port's slot. A load
        // folded into each FMA costs no FMA slot.
        asm("" : "+r"(samples));
#pragma GCC unroll 16
        for (int a = 0; a < kAcc; ++a) {
          V sample;
          std::memcpy(&sample, samples + a * kRows, sizeof(V));
          cpu::Fma(acc[a], sample, tap, acc[a]);
        }
      }
      // Unrolled, as every loop over the accumulators: an index known only at run time would keep
      // them in memory rather than registers.
#pragma GCC unroll 16
      for (int a = 0; a < kAcc; ++a) {
        std::memcpy(results + (t * kAcc + a) * kRows, &acc[a], sizeof(V));
      }
      store_blocks(std::min(count, (t + 1) * kAcc));
    }
    for (int r = 0; r < kRows; ++r) {
      for (std::int64_t q = o; q < count; ++q) {
        out_rows[r * shape.outputs + q] = results[q * kRows + r];
      }
    }
  }
}

// The outputs [begin, end): whole groups of G::kRows rows transposed, the rest by `by_rows`.
template <class G>
__attribute__((always_inline)) inline void Grouped(const float* x, float* y, const FirShape& shape,
                                                   const float* taps, std::int64_t begin,
                                                   std::int64_t end,
                                                   void (*by_rows)(const float*, float*,
                                                                   const FirShape&, const float*,
                                                                   std::int64_t, std::int64_t)) {
  const std::int64_t m = shape.outputs;
  const std::int64_t first_full_row = (begin + m - 1) / m;
  const std::int64_t end_full_row = end / m;
  const std::int64_t groups = std::max<std::int64_t>(0, end_full_row - first_full_row) / G::kRows;
  if (groups == 0) return by_rows(x, y, shape, taps, begin, end);
  const std::int64_t grouped_begin = first_full_row * m;
  const std::int64_t grouped_end = (first_full_row + groups * G::kRows) * m;
  by_rows(x, y, shape, taps, begin, grouped_begin);
  AlignedFloats scratch;
  for (std::int64_t g = 0; g < groups; ++g) {
    RowGroup<G>(x, y, shape, taps, first_full_row + g * G::kRows, scratch);
  }
  _mm_sfence();  // the streaming stores are visible before the op returns
  by_rows(x, y, shape, taps, grouped_end, end);
}

CONSTMEM_TARGET_AVX512 __attribute__((flatten)) void Avx512Grouped(const float* x, float* y,
                                                                   const FirShape& shape,
                                                                   const float* taps,
                                                                   std::int64_t begin,
                                                                   std::int64_t end) {
  Grouped<GroupAvx512>(x, y, shape, taps, begin, end, Avx512<float>);
}

CONSTMEM_TARGET_AVX2 __attribute__((flatten)) void Avx2Grouped(const float* x, float* y,
                                                               const FirShape& shape,
                                                               const float* taps,
                                                               std::int64_t begin,
                                                               std::int64_t end) {
  Grouped<GroupAvx2>(x, y, shape, taps, begin, end, Avx2<float>);
}

#pragma GCC diagnostic pop
#endif

using cpu::NarrowRow;
using cpu::WidenRow;

// 16-bit data: chunks of outputs of up to 16 rows at once (whole rows where the range holds them,
// so that the float kernel's transposed groups take them), each the float kernel's VALID filter of
// the chunk's samples converted to float with the padding's zeros written out, then rounded
// (FromCompute): out-of-row samples are zeros in both, so every output takes the same fused
// multiply-adds in the same order.
template <class T>
void NarrowRange(const T* x, T* y, const FirShape& shape, const float* taps, std::int64_t begin,
                 std::int64_t end, cpu::Isa isa) {
  constexpr std::int64_t kMostRows = 16;
  const std::int64_t n = shape.length, m = shape.outputs, k = shape.taps;
  // A chunk's samples cost k - 1 conversions beyond its outputs; its outputs, k FMAs each.
  const std::int64_t chunk_outputs = std::max<std::int64_t>(4096, k);
  std::vector<float> samples, outputs;
  while (begin < end) {
    const std::int64_t row = begin / m, first = begin % m;
    const std::int64_t last = std::min(m, first + (end - begin));
    const std::int64_t rows = first == 0 && last == m ? std::min(kMostRows, (end - begin) / m) : 1;
    for (std::int64_t i0 = first; i0 < last;) {
      const std::int64_t i1 = std::min(last, i0 + chunk_outputs);
      FirShape chunk;
      chunk.rows = rows;
      chunk.outputs = i1 - i0;
      chunk.taps = k;
      chunk.length = chunk.outputs + k - 1;
      chunk.pad_left = 0;
      samples.resize(static_cast<std::size_t>(rows * chunk.length));
      outputs.resize(static_cast<std::size_t>(rows * chunk.outputs));
      const std::int64_t start = i0 - shape.pad_left;  // the chunk's first sample
      const std::int64_t from = std::min(std::max<std::int64_t>(start, 0), start + chunk.length);
      const std::int64_t to = std::max(std::min(start + chunk.length, n), from);
      for (std::int64_t r = 0; r < rows; ++r) {
        float* const to_row = samples.data() + r * chunk.length;
        const T* const from_row = x + (row + r) * n;
        std::fill(to_row, to_row + (from - start), 0.0f);
        WidenRow(from_row + from, to_row + (from - start), to - from, isa);
        std::fill(to_row + (to - start), to_row + chunk.length, 0.0f);
      }
      FirFilterCpuRange(samples.data(), outputs.data(), chunk, taps, 0, rows * chunk.outputs, isa);
      for (std::int64_t r = 0; r < rows; ++r) {
        T* const out = y + (row + r) * m + i0;
        const float* const values = outputs.data() + r * chunk.outputs;
        NarrowRow(values, out, chunk.outputs, isa);
      }
      i0 = i1;
    }
    begin += rows * (last - first);
  }
}

}  // namespace

template <class T>
void FirFilterCpuRange(const T* x, T* y, const FirShape& shape, const ComputeTypeOf<T>* taps,
                       std::int64_t begin, std::int64_t end, cpu::Isa isa) {
  if (begin >= end || shape.outputs == 0 || shape.taps < 1) return;
  if constexpr (!std::is_same<T, ComputeTypeOf<T>>::value) {
    NarrowRange(x, y, shape, taps, begin, end, isa);
  } else {
    switch (isa) {
#if CONSTMEM_CPU_X86
      case cpu::Isa::kAvx512:
        if constexpr (std::is_same<T, float>::value) {
          if (shape.taps <= kGroupedMaxTaps) return Avx512Grouped(x, y, shape, taps, begin, end);
        }
        return Avx512(x, y, shape, taps, begin, end);
      case cpu::Isa::kAvx2:
        if constexpr (std::is_same<T, float>::value) {
          if (shape.taps <= kGroupedMaxTaps) return Avx2Grouped(x, y, shape, taps, begin, end);
        }
        return Avx2(x, y, shape, taps, begin, end);
#endif
      default:
        return Portable(x, y, shape, taps, begin, end);
    }
  }
}

template void FirFilterCpuRange<float>(const float*, float*, const FirShape&, const float*,
                                       std::int64_t, std::int64_t, cpu::Isa);
template void FirFilterCpuRange<double>(const double*, double*, const FirShape&, const double*,
                                        std::int64_t, std::int64_t, cpu::Isa);
template void FirFilterCpuRange<Float16>(const Float16*, Float16*, const FirShape&, const float*,
                                         std::int64_t, std::int64_t, cpu::Isa);
template void FirFilterCpuRange<BFloat16>(const BFloat16*, BFloat16*, const FirShape&, const float*,
                                          std::int64_t, std::int64_t, cpu::Isa);

}  // namespace ops
}  // namespace constmem
