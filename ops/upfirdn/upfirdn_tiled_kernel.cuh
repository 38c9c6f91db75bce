// SPDX-License-Identifier: Apache-2.0
// Upfirdn's tiled CUDA kernel (UpfirdnKernel) and its device helpers, with no CUDA runtime call:
// upfirdn_gpu.cu launches it as upfirdn_plan.h plans its tiles, and the tests run it on the CPU
// through constmem/testing/emulated_gpu.hpp. Shapes it cannot take run upfirdn_direct_kernel.cuh.
//
// Polyphase (upfirdn_functor.h): output c + s * P has phase (c * down) mod up and base
// (c * down) div up + s * Q, so a tile of S values of s holds S * P consecutive outputs, all of
// whose samples lie in S * Q consecutive input samples plus a halo of ceil(k / up) - 1. A block
// stages a tile's samples in shared memory (asynchronous copies, issued while the block computes
// the tile before from a second buffer; 16 bytes a copy where Q is 1 to 3, StageSpan), computes
// its outputs into shared memory, and writes them out in coalesced 16-byte stores (StoreSpan):
// each input sample is read from memory about once (the halo once more for each tile, and for each
// chunk of terms where there are several), each output written once.
//
// A thread takes 7 outputs of one phase with consecutive s (their bases Q apart) and walks the
// phase's taps in ascending order, each tap read once for the 7; an integer upsampling whose P is a
// multiple of 4 (8 kHz -> 96 kHz: P = 12) takes 7 outputs of 4 phases, whose bases are the same
// (PhaseBlockOutputs). Where Q is 1 to 3 the samples of U = kWindowTerms terms come into registers
// once for all 7 outputs (a window of 6 Q + U samples for 7 U FMAs) instead of once per FMA. An
// integer downsampling at Q of 4 and more (one phase: 96 kHz -> 8 kHz is Q = 12) stages its samples
// by residue, sample e at (e mod Q) * rows + e div Q (Geometry::residue_rows): a thread's 7
// outputs, Q samples apart, read consecutive words of one residue's row at each term, and the
// lanes, 7 outputs apart, distinct banks, where in order lanes 7 Q apart meet up to gcd(7 Q, 32) to
// a bank. At Q of 4, 6 and 12 (float32) a kernel compiled for that Q loads a window of samples into
// registers, as at Q of 1 to 3, at constant offsets from residue 0, or at 12 slides rows of Q
// samples through them (ResidueOutputs). Which outputs the lanes of a warp take is the placement
// question (upfirdn_launcher.h, UpfirdnArrangement): one phase per warp, so that every lane reads
// the same tap (constant memory's broadcast, by value or from a bank), or consecutive phases per
// warp with the taps in shared memory. A phase a lane stages its taps by phase (StageUpfirdnTaps),
// so that lanes on consecutive phases read consecutive words.
//
// A filter of more than kHaloChunkTerms terms a phase (a long filter at a small `up`) is walked in
// chunks of kHaloChunkTerms terms: for each chunk the block stages the tile's samples with that
// chunk's halo, and carries every output's partial sum from chunk to chunk in the tile's output
// buffer: the same fused multiply-adds in the same order, so the results are unchanged.
//
// float16 and bfloat16 data are computed in float with float's tiles, registers and FMAs: a step's
// 16-bit samples land in a buffer of their own (16-byte asynchronous copies, in order), are
// converted once into one float tile buffer in the layout the step reads (in order, padded or by
// residue), and the outputs leave rounded to nearest even, 8 a 16-byte store. The results are the
// CPU kernel's bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "constmem/async_copy.cuh"
#include "constmem/host_device.hpp"
#include "constmem/numeric.hpp"
#include "constmem/shared_table.cuh"
#include "constmem/tile_staging.cuh"
#include "upfirdn/upfirdn_functor.h"
#include "upfirdn/upfirdn_plan.h"

namespace constmem {
namespace ops {
namespace upfirdn_kernels {

// Where local sample e lies in a sample buffer: one element of padding after every 32 where
// kPaddedSlots (kPadded, upfirdn_plan.h), else at e.
template <bool kPaddedSlots>
__host__ __device__ constexpr int Slot(int e) {
  return kPaddedSlots ? e + (e >> 5) : e;
}

// The terms m of an output of base `b` (less m0) that meet samples inside the row: lo ... hi.
__device__ __forceinline__ void TermsInside(std::int64_t b, int terms, std::int64_t length, int* lo,
                                            int* hi) {
  const std::int64_t past = b - length + 1;  // terms m < past meet samples past the row's end
  *lo = past <= 0 ? 0 : past >= terms ? terms : static_cast<int>(past);
  *hi = b < terms - 1 ? static_cast<int>(b) : terms - 1;
}

// Whether a thread's `count` outputs, bases b0 + r q (less m0), meet samples inside the row at
// every one of their `terms` terms.
__device__ __forceinline__ bool OutputsInside(int count, std::int64_t b0, int q, int terms,
                                              std::int64_t length) {
  return count > 0 && b0 >= terms - 1 &&
         b0 + static_cast<std::int64_t>(count - 1) * q <= length - 1;
}

// Whether they are also all kOutputs: the paths without bounds take them.
__device__ __forceinline__ bool AllTermsInside(int count, std::int64_t b0, int q, int terms,
                                               std::int64_t length) {
  return count == kOutputs && b0 >= terms - 1 &&
         b0 + static_cast<std::int64_t>(kOutputs - 1) * q <= length - 1;
}

// Output `e` (local index of its base) of one phase, exactly, added to `acc`: the terms inside the
// row and the phase, m ascending, term m's tap at taps[tap0 + m * step] (step: up, or P for taps
// staged by phase). Within a chunk of terms, b and tap0 are those of its first term.
template <bool kPaddedSlots, class T, class Taps>
__device__ __forceinline__ T ExactOutput(const T* in, int e, std::int64_t b, int tap0, int terms,
                                         std::int64_t length, int step, const Taps& taps, T acc) {
  int lo, hi;
  TermsInside(b, terms, length, &lo, &hi);
#pragma unroll 4
  for (int m = lo; m <= hi; ++m)
    acc = fma(in[Slot<kPaddedSlots>(e - m)], taps[tap0 + m * step], acc);
  return acc;
}

// Samples staged by residue (`rows` entries a residue, q residues): local sample e is entry
// e div q of residue e mod q's row. A walk from it, one sample back a step (a term m further).
struct ResidueWalk {
  int at, residue, rows, q;
  __device__ __forceinline__ ResidueWalk(int e, int rows_, int q_, const FastDivisor& by_q)
      : rows(rows_), q(q_) {
    const int row = static_cast<int>(by_q.Divide(static_cast<std::uint32_t>(e)));
    residue = e - row * q;
    at = residue * rows + row;
  }
  __device__ __forceinline__ void Back() {
    // The last entry of the row before, at residue 0.
    at += residue == 0 ? (q - 1) * rows - 1 : -rows;
    residue = residue == 0 ? q - 1 : residue - 1;
  }
};

// ExactOutput over samples staged by residue (`rows` a residue).
template <class T, class Taps>
__device__ __forceinline__ T ExactResidueOutput(const T* in, int rows, int q,
                                                const FastDivisor& by_q, int e, std::int64_t b,
                                                int tap0, int terms, std::int64_t length, int step,
                                                const Taps& taps, T acc) {
  int lo, hi;
  TermsInside(b, terms, length, &lo, &hi);
  if (lo > hi) return acc;
  ResidueWalk walk(e - lo, rows, q, by_q);
  for (int m = lo; m <= hi; ++m) {
    acc = fma(in[walk.at], taps[tap0 + m * step], acc);
    walk.Back();
  }
  return acc;
}

// kOutputs outputs of one phase inside the row, Q = kQ, in chunks of U terms: for the chunk from
// term m0 a window of samples comes into registers, window[w] = sample(m0, w) (samples
// e0 - m0 - (U - 1) + w for bases at e0 + r Q), and term m0 + j of output r is
// window[U - 1 - j + r Q]: 6 Q + U loads for 7 U FMAs.
template <int kQ, int U, class T, class Taps, class Sample>
__device__ __forceinline__ void WindowedOutputs(const Sample& sample, int tap0, int step, int terms,
                                                const Taps& taps, T (&acc)[kOutputs]) {
  constexpr int W = (kOutputs - 1) * kQ + U;
  int m0 = 0, tap = tap0;
  auto apply = [&](auto guarded) {
    T window[W];
#pragma unroll
    for (int w = 0; w < W; ++w) window[w] = sample(m0, w);
#pragma unroll
    for (int j = 0; j < U; ++j) {
      if (decltype(guarded)::value && m0 + j >= terms) break;
      const T h = taps[tap + j * step];
#pragma unroll
      for (int r = 0; r < kOutputs; ++r) acc[r] = fma(window[U - 1 - j + r * kQ], h, acc[r]);
    }
  };
  for (; m0 + U <= terms; m0 += U, tap += U * step) apply(std::false_type());
  if (m0 < terms) apply(std::true_type());
}

// f(std::integral_constant<int, t>()) for each t of the sequence, in order.
template <class F, int... t>
__device__ __forceinline__ void ForEachSlot(F&& f, std::integer_sequence<int, t...>) {
  (f(std::integral_constant<int, t>()), ...);
}

// kOutputs outputs of one phase, kQ samples apart, in chunks of kQ terms, from rows of kQ samples:
// row R (R <= 6) is samples e0 - (kQ - 1) + R kQ + i, i < kQ, as row(i, R) reads them, so that the
// chunk from term c kQ of output r reads row r - c, term c kQ + j its sample kQ - 1 - j. A ring of
// kOutputs rows in registers: row R in slot R mod kOutputs, each chunk loads the one row the next
// takes (kQ loads for 7 kQ FMAs, where a window of every output's samples a chunk loads 7 kQ), and
// a whole turn of the ring an iteration keeps every register index a constant. Terms m ascending,
// as ExactOutput.
template <int kQ, class T, class Taps, class Row>
__device__ __forceinline__ void SlidingRows(const Row& row, int tap0, int step, int terms,
                                            const Taps& taps, T (&acc)[kOutputs]) {
  constexpr int S = kOutputs;
  T ring[S][kQ];
#pragma unroll
  for (int k = 0; k < S; ++k) {
#pragma unroll
    for (int i = 0; i < kQ; ++i) ring[k][i] = row(i, k);
  }
  const int full = terms / kQ, chunks = (terms + kQ - 1) / kQ;
  // Chunk c's terms, the last guarded: slot (r - t) mod S holds output r's row at c = t mod S.
  auto apply = [&](auto t, auto guarded, int c) {
    const int m0 = c * kQ;
#pragma unroll
    for (int j = 0; j < kQ; ++j) {
      if (decltype(guarded)::value && m0 + j >= terms) break;
      const T h = taps[tap0 + (m0 + j) * step];
#pragma unroll
      for (int r = 0; r < kOutputs; ++r) {
        acc[r] = fma(ring[(r - decltype(t)::value + S) % S][kQ - 1 - j], h, acc[r]);
      }
    }
    // Row -(c + 1), for chunk c + 1, into the slot of row S - 1 - c, which no later chunk reads.
    if (c + 1 < chunks) {
#pragma unroll
      for (int i = 0; i < kQ; ++i) ring[S - 1 - decltype(t)::value][i] = row(i, -(c + 1));
    }
  };
  for (int c = 0; c < chunks;) {
    auto turn = [&](auto t) {
      if (c < full) {
        apply(t, std::false_type(), c++);
      } else if (c < chunks) {
        apply(t, std::true_type(), c++);
      }
    };
    ForEachSlot(turn, std::make_integer_sequence<int, S>());
  }
}

// f(std::integral_constant<int, count>()) for a count of 2 to kOutputs - 1.
template <class F>
__device__ __forceinline__ void WithOutputCount(int count, F&& f) {
  ForEachSlot(
      [&](auto n) {
        if (count == decltype(n)::value + 2)
          f(std::integral_constant<int, decltype(n)::value + 2>());
      },
      std::make_integer_sequence<int, kOutputs - 2>());
}

// A thread's `count` outputs of the one phase from samples staged by residue, output r's base at
// local e0 + r q (b0 + r q in the row, less m0), terms m ascending as ExactOutput. Inside the row,
// with Q compiled (kQ >= 4), a window of samples e0 - m0 - (U - 1) ... e0 + 6 Q - m0 comes into
// registers for U terms (as InteriorOutputs'), its first sample residue 0's (Geometry::lead), so
// that its loads are at constant offsets; where a window holds one chunk of Q terms (Q >
// kWindowTerms / 2: 96 kHz -> 8 kHz), so that its 7 Q loads feed 7 Q FMAs, rows of Q samples slide
// through registers instead (SlidingRows: Q loads a chunk). With a run-time Q the 7 read
// consecutive entries of one residue's row a term. Either way the lanes, 7 entries apart, read
// distinct banks.
template <int kQ, class T, class Taps>
__device__ __forceinline__ void ResidueOutputs(const T* in, int rows, int q,
                                               const FastDivisor& by_q, int e0, std::int64_t b0,
                                               int tap0, int step, int terms, std::int64_t length,
                                               int count, const Taps& taps, T (&acc)[kOutputs]) {
  if (AllTermsInside(count, b0, q, terms, length)) {
    if constexpr (kQ >= 4) {
      constexpr int U = ResidueWindowTerms<T>(kQ);
      const T* const first_row = in + (e0 - (U - 1)) / kQ;  // residue 0's entry, m0 = 0
      if constexpr (U == kQ) {
        SlidingRows<kQ>([&](int residue, int row) { return first_row[residue * rows + row]; }, tap0,
                        step, terms, taps, acc);
      } else {
        WindowedOutputs<kQ, U>(
            [&](int from, int w) { return first_row[(w % kQ) * rows + w / kQ - from / kQ]; }, tap0,
            step, terms, taps, acc);
      }
    } else {
      ResidueWalk walk(e0, rows, q, by_q);
#pragma unroll 4
      for (int m = 0; m < terms; ++m) {
        const T h = taps[tap0 + m * step];
#pragma unroll
        for (int r = 0; r < kOutputs; ++r) acc[r] = fma(in[walk.at + r], h, acc[r]);
        walk.Back();
      }
    }
    return;
  }
#pragma unroll
  for (int r = 0; r < kOutputs; ++r) {
    if (r < count) {
      acc[r] =
          ExactResidueOutput(in, rows, q, by_q, e0 + r * q, b0 + static_cast<std::int64_t>(r) * q,
                             tap0, terms, length, step, taps, acc[r]);
    }
  }
}

// kCount outputs of one phase whose every term is inside the row: bases at local e0 + r * q, term
// m's tap at taps[tap0 + m * step]. Fewer than kOutputs at a run-time Q only (tiles of S < 7 at a
// large Q: each tap still read once for them all).
template <int kQ, bool kPaddedSlots, int kCount = kOutputs, class T, class Taps>
__device__ __forceinline__ void InteriorOutputs(const T* in, int e0, int q, int tap0, int step,
                                                int terms, const Taps& taps, T (&acc)[kOutputs]) {
  static_assert(kCount == kOutputs || kQ == 0, "fewer outputs at a run-time Q only");
  constexpr int U = kWindowTerms<T>;
  if constexpr (kQ > 0) {
    WindowedOutputs<kQ, U>([&](int from, int w) { return in[e0 - from - (U - 1) + w]; }, tap0, step,
                           terms, taps, acc);
  } else {
    int tap = tap0;
    int m0 = 0;
    auto apply = [&](auto guarded) {
#pragma unroll
      for (int j = 0; j < U; ++j) {
        if (decltype(guarded)::value && m0 + j >= terms) break;
        const T h = taps[tap + j * step];
#pragma unroll
        for (int r = 0; r < kCount; ++r) {
          acc[r] = fma(in[Slot<kPaddedSlots>(e0 + r * q - m0 - j)], h, acc[r]);
        }
      }
    };
    for (; m0 + U <= terms; m0 += U, tap += U * step) apply(std::false_type());
    if (m0 < terms) apply(std::true_type());
  }
}

// kOutputs outputs of each of kPhaseBlock phases that share their bases, every term inside the row:
// term m of output r of phase i is in[e0 + r - m] times taps[tap0[i] + m * step], m < terms[i]
// ascending (ExactOutput's order). A window of samples comes into registers once for the phases'
// 28 outputs, as InteriorOutputs' for one phase's 7, over the terms every phase has; the phases'
// terms differ by at most one (their first taps lie within `up` of each other), and those with more
// take theirs after.
template <class T, class Taps>
__device__ __forceinline__ void PhaseBlockOutputs(const T* in, int e0,
                                                  const int (&tap0)[kPhaseBlock], int step,
                                                  const int (&terms)[kPhaseBlock], const Taps& taps,
                                                  T (&acc)[kPhaseBlock][kOutputs]) {
  constexpr int U = kWindowTerms<T>;
  constexpr int W = kOutputs - 1 + U;
  int fewest = terms[0], most = terms[0];
#pragma unroll
  for (int i = 1; i < kPhaseBlock; ++i) {
    fewest = min(fewest, terms[i]);
    most = max(most, terms[i]);
  }
  int m0 = 0;
  auto apply = [&](auto guarded) {
    T window[W];  // window[U - 1 - j + r]: term m0 + j of output r
#pragma unroll
    for (int w = 0; w < W; ++w) window[w] = in[e0 - m0 - (U - 1) + w];
#pragma unroll
    for (int j = 0; j < U; ++j) {
      if (decltype(guarded)::value && m0 + j >= fewest) break;
#pragma unroll
      for (int i = 0; i < kPhaseBlock; ++i) {
        const T h = taps[tap0[i] + (m0 + j) * step];
#pragma unroll
        for (int r = 0; r < kOutputs; ++r) acc[i][r] = fma(window[U - 1 - j + r], h, acc[i][r]);
      }
    }
  };
  for (; m0 + U <= fewest; m0 += U) apply(std::false_type());
  if (m0 < fewest) apply(std::true_type());
  for (int m = fewest; m < most; ++m) {
#pragma unroll
    for (int i = 0; i < kPhaseBlock; ++i) {
      if (m < terms[i]) {
        const T h = taps[tap0[i] + m * step];
#pragma unroll
        for (int r = 0; r < kOutputs; ++r) acc[i][r] = fma(in[e0 + r - m], h, acc[i][r]);
      }
    }
  }
}

// Taps a phase a lane reads staged by phase: row m holds term m of every phase, phase c's at
// m * P + c, zero past a phase's last term. The lanes of a warp, on consecutive phases, then read
// consecutive words, where in the filter's own order their taps p + m * up, p = c * down mod up,
// meet up to 3 to a bank at the audio rates (96 kHz -> 11.025 kHz). P rows of ceil(k / up): about
// k, at most up - 1 more (TapRows).
// The tables a block stages whole (a SharedPrefixSource stages part of one).
template <class Taps>
constexpr bool StagesWhole(const Taps*) {
  return false;
}
template <class T>
constexpr bool StagesWhole(const SharedTableSource<T>*) {
  return true;
}
template <class ByValue>
constexpr bool StagesWhole(const ByValueSharedSource<ByValue>*) {
  return true;
}
template <class Taps>
constexpr bool kStagedByPhase = StagesWhole(static_cast<const Taps*>(nullptr));

template <class T>
__device__ __forceinline__ T TapOf(const SharedTableSource<T>& taps, int i) {
  return __ldg(taps.values + i);
}
template <class ByValue>
__device__ __forceinline__ typename ByValue::Entry TapOf(const ByValueSharedSource<ByValue>& taps,
                                                         int i) {
  return taps.table.values[i];
}

// The reader of a launch's taps: for kByPhase, staged by phase where g.tap_rows says so, else as
// StageTable stages them (or the reader itself). Every thread of the block must call it.
template <bool kByPhase, class T, class Taps>
__device__ __forceinline__ decltype(auto) StageUpfirdnTaps(const Taps& taps, const Geometry& g,
                                                           unsigned char* staging) {
  if constexpr (kByPhase) {
    if (g.tap_rows == 0) return StageTable(taps, g.taps, staging);
    T* const shared = reinterpret_cast<T*>(staging);
    const int entries = g.period * g.tap_rows;
    for (int i = threadIdx.x; i < entries; i += blockDim.x) {
      const int m = static_cast<int>(g.by_period.Divide(i)), c = i - m * g.period;
      const int cd = c * g.down;
      const int tap = cd - static_cast<int>(g.by_up.Divide(cd)) * g.up + m * g.up;
      shared[i] = tap < g.taps ? TapOf(taps, tap) : T(0);
    }
    __syncthreads();
    return SharedTableReader<T>{shared};
  } else {
    return StageTable(taps, g.taps, staging);
  }
}

// In: the data's type; T, its compute type (float for float16 and bfloat16, whose samples land in
// a buffer of their own and are converted into one tile buffer: kLanded). kQ: Q where it is 1 to
// 3, else 0 (Q from the geometry). kPerWarp: the arrangement. kShortTiles: tiles of fewer than
// kOutputs outputs a phase, at a run-time Q a phase a lane. kPhaseBlocks: kPhaseBlock phases an
// item, an integer upsampling's (WithTiledKernel).
template <class In, class Taps, int kQ, bool kPerWarp, bool kShortTiles = false,
          bool kPhaseBlocks = false>
__global__ void __launch_bounds__(kThreads)
    UpfirdnKernel(const In* __restrict__ x, In* __restrict__ y, const Geometry g,
                  const __grid_constant__ Taps taps) {
  using T = ComputeTypeOf<In>;
  constexpr bool kLandedSamples = kLanded<In>;
  unsigned char* const shared_bytes = DynamicSharedMemory();
  constexpr bool kByPhase = !kPerWarp && kStagedByPhase<Taps>;
  const auto& h = StageUpfirdnTaps<kByPhase, T>(taps, g, shared_bytes);
  const bool by_phase = kByPhase && g.tap_rows > 0;
  In* const landing = reinterpret_cast<In*>(shared_bytes + g.tiles_offset);
  T* const in_buffers =
      reinterpret_cast<T*>(shared_bytes + g.tiles_offset + (kLandedSamples ? g.landing_bytes : 0));
  T* const out_buffer = in_buffers + (kLandedSamples ? 1 : 2) * g.in_elements;
  constexpr bool kPaddedSlots = kPadded<kQ, kPerWarp>;
  const int q = kQ > 0 ? kQ : g.stride;
  const int P = g.period, S = g.tile_s;
  const std::int64_t tile_samples = static_cast<std::int64_t>(S) * q;
  // A compiled Q of 4 and more is one phase's, staged by residue (CompiledStride).
  const bool by_residue = kQ >= 4 || (kPaddedSlots && g.residue_rows > 0);

  // The row of `tile` and the row sample its staged sample 0 is for the chunk of terms from m0.
  auto first_sample = [&](std::int64_t tile, int m0, const In** row_x) {
    const std::int64_t row = tile / g.tiles_per_row, t = tile - row * g.tiles_per_row;
    *row_x = x + row * g.length;
    return t * tile_samples - m0 - (g.halo_terms - 1) - g.lead;
  };
  auto stage = [&](int buffer, std::int64_t tile, int chunk) {
    const In* row_x;
    const std::int64_t first = first_sample(tile, chunk * g.halo_terms, &row_x);
    T* const to = in_buffers + buffer * g.in_elements;
    if constexpr (kLandedSamples) {
      (void)to;
      StageSpan(landing, row_x, first, g.staged, g.length, threadIdx.x, blockDim.x);
    } else if (by_residue) {
      // Sample e at (e mod q) * rows + e div q. The first `copiers` threads, a multiple of q, take
      // samples e = t, t + copiers, ...: each thread stays on residue t mod q and its entries step
      // by copiers / q, so that a step adds constants to both addresses (a warp's lanes still read
      // consecutive samples); where the whole span lies inside the row, without bounds. A q above
      // the block's threads walks residues and rows thread by thread.
      const int row_step = static_cast<int>(g.by_stride.Divide(blockDim.x));
      const int copiers = row_step * q;
      if (row_step == 0) {
        int row = 0, residue = threadIdx.x;
        for (int e = threadIdx.x; e < g.staged; e += blockDim.x) {
          const std::int64_t s = first + e;
          const bool inside = s >= 0 && s < g.length;
          CopyAsync(to + residue * g.residue_rows + row, inside ? row_x + s : row_x, inside);
          residue += blockDim.x;
          if (residue >= q) {
            residue -= q;
            ++row;
          }
        }
      } else if (static_cast<int>(threadIdx.x) < copiers) {
        const int row = static_cast<int>(g.by_stride.Divide(threadIdx.x));
        const int residue = static_cast<int>(threadIdx.x) - row * q;
        unsigned at =
            static_cast<unsigned>(__cvta_generic_to_shared(to + residue * g.residue_rows + row));
        const unsigned at_step = static_cast<unsigned>(row_step * sizeof(T));
        int e = threadIdx.x;
        if (first >= 0 && first + g.staged <= g.length) {
          // Four copies a step, one bound for them.
          const T* from = row_x + first + e;
          for (; e + 3 * copiers < g.staged; e += 4 * copiers) {
#pragma unroll
            for (int k = 0; k < 4; ++k, from += copiers, at += at_step) CopyAsync(at, from, true);
          }
          for (; e < g.staged; e += copiers, from += copiers, at += at_step) {
            CopyAsync(at, from, true);
          }
        } else {
          for (; e < g.staged; e += copiers, at += at_step) {
            const std::int64_t s = first + e;
            const bool inside = s >= 0 && s < g.length;
            CopyAsync(at, inside ? row_x + s : row_x, inside);
          }
        }
      }
    } else if constexpr (!kPaddedSlots) {
      // 16-byte copies: sample e at to[SpanShift(row_x, first) + e].
      StageSpan(to, row_x, first, g.staged, g.length, threadIdx.x, blockDim.x);
    } else {
      for (int e = threadIdx.x; e < g.staged; e += blockDim.x) {
        const std::int64_t s = first + e;
        const bool inside = s >= 0 && s < g.length;
        CopyAsync(to + Slot<true>(e), inside ? row_x + s : row_x, inside);
      }
    }
  };

  static_assert(!kPhaseBlocks || (kQ == 1 && kPerWarp), "phase blocks: Q = 1, a phase a warp");
  const int groups = (S + kOutputs - 1) / kOutputs;  // a multiple of 32 for kPerWarp
  const int items = (kPhaseBlocks ? P / kPhaseBlock : P) * groups;
  // A step is a tile and a chunk of its terms; a block takes tiles blockIdx.x + i * gridDim.x.
  std::int64_t tile = blockIdx.x;
  int chunk = 0;
  if (tile < g.tiles) stage(0, tile, 0);
  CopyAsyncCommit();
  for (int current = 0; tile < g.tiles; current ^= 1) {
    CopyAsyncWaitAll();
    // This step's samples are visible to the block, the last tile's outputs are out, and every
    // thread is done with the buffer the next step goes to.
    __syncthreads();
    if constexpr (kLandedSamples) {
      // The landed samples into the tile buffer as the layout says, as floats; then the landing
      // buffer is free for the next step's.
      const In* row_x;
      const std::int64_t first = first_sample(tile, chunk * g.halo_terms, &row_x);
      const In* const from = landing + SpanShift(row_x, first);  // sample e at from[e]
      if (by_residue) {
        for (int e = threadIdx.x; e < g.staged; e += blockDim.x) {
          const int row = static_cast<int>(g.by_stride.Divide(static_cast<std::uint32_t>(e)));
          in_buffers[(e - row * q) * g.residue_rows + row] = ToCompute<T>(from[e]);
        }
      } else if constexpr (kPaddedSlots) {
        for (int e = threadIdx.x; e < g.staged; e += blockDim.x) {
          in_buffers[Slot<true>(e)] = ToCompute<T>(from[e]);
        }
      } else {
        // Aligned: the tile holds sample e where the landing buffer does, 8 a chunk.
        const int chunks = SpanElements<In>(SpanShift(row_x, first) + g.staged) / 8;
        for (int c = threadIdx.x; c < chunks; c += blockDim.x) {
          float v[8];
          WidenChunk(landing + c * 8, v);
          float4* const to = reinterpret_cast<float4*>(in_buffers + c * 8);
          to[0] = make_float4(v[0], v[1], v[2], v[3]);
          to[1] = make_float4(v[4], v[5], v[6], v[7]);
        }
      }
      __syncthreads();
    }
    const bool last_chunk = chunk + 1 == g.halo_chunks;
    const std::int64_t next_tile = last_chunk ? tile + gridDim.x : tile;
    const int next_chunk = last_chunk ? 0 : chunk + 1;
    if (next_tile < g.tiles) stage(current ^ 1, next_tile, next_chunk);
    CopyAsyncCommit();

    const int m0 = chunk * g.halo_terms;
    const In* row_x;
    const std::int64_t first = first_sample(tile, m0, &row_x);
    const T* const in = in_buffers + (kLandedSamples ? 0 : current * g.in_elements) +
                        (kPaddedSlots || by_residue ? 0 : SpanShift(row_x, first));
    const std::int64_t row = tile / g.tiles_per_row, t = tile - row * g.tiles_per_row;
    const std::int64_t tile_s0 = t * S;  // the tile's first s
    In* const row_y = y + row * g.outputs + tile_s0 * P;
    // Output j of the tile at out[j]: shifted as StoreSpan writes it out. Between chunks it holds
    // the outputs' partial sums, each read and written by the thread that owns it.
    T* const out = out_buffer + SpanShift(row_y, 0);
    // 2 to 6 outputs inside the row (a short tile's), each tap read once for them all; whether it
    // took them.
    static_assert(!kShortTiles || (kQ == 0 && !kPerWarp),
                  "short tiles: a run-time Q, a phase a lane");
    auto fewer_inside = [&](int count, int e0, std::int64_t b0, int p0, int step, int terms,
                            T(&acc)[kOutputs]) {
      if constexpr (kShortTiles) {
        if (count > 1 && count < kOutputs && OutputsInside(count, b0, q, terms, g.length)) {
          WithOutputCount(count, [&](auto n) {
            InteriorOutputs<kQ, kPaddedSlots, decltype(n)::value>(in, e0, q, p0, step, terms, h,
                                                                  acc);
          });
          return true;
        }
      }
      return false;
    };
    // The terms of phase c in this chunk (m0 ... m0 + terms - 1, its first tap p + m0 * up).
    auto chunk_terms = [&](int p) {
      const int phase_terms = p < g.taps ? static_cast<int>(g.by_up.Divide(g.taps - 1 - p)) + 1 : 0;
      const int left_terms = phase_terms - m0;
      return left_terms <= 0 ? 0 : left_terms < g.halo_terms ? left_terms : g.halo_terms;
    };
    // The outputs of phase c of `group` (one thread's), as ExactOutput and the paths above compute
    // them.
    auto phase_item = [&](int c, int group) {
      const int cd = c * g.down;
      const int base = static_cast<int>(g.by_up.Divide(cd)), p = cd - base * g.up;
      const int terms = chunk_terms(p);
      // Term m of the phase: h[p0 + m * step] (staged by phase: a row a term).
      const int p0 = by_phase ? m0 * P + c : p + m0 * g.up;
      const int step = by_phase ? P : g.up;
      const int s0 = group * kOutputs;
      // Outputs r of this thread: s0 + r < S and inside the row.
      const std::int64_t remaining = g.outputs - c - (tile_s0 + s0) * P;
      const int in_tile = S - s0 < kOutputs ? S - s0 : kOutputs;
      const int count = remaining >= static_cast<std::int64_t>(in_tile) * P ? in_tile
                        : remaining <= 0 ? 0
                                         : (static_cast<int>(remaining) + P - 1) / P;
      if (count <= 0) return;
      const int e0 = g.lead + g.halo_terms - 1 + base + s0 * q;
      // The base of the thread's first output, less m0: the sample its chunk's first term meets.
      const std::int64_t b0 = base + (tile_s0 + s0) * q - m0;
      T acc[kOutputs];
#pragma unroll
      for (int r = 0; r < kOutputs; ++r)
        acc[r] = r < count && m0 > 0 ? out[c + (s0 + r) * P] : T(0);
      if (by_residue) {
        ResidueOutputs<kQ>(in, g.residue_rows, q, g.by_stride, e0, b0, p0, step, terms, g.length,
                           count, h, acc);
      } else if (AllTermsInside(count, b0, q, terms, g.length)) {
        InteriorOutputs<kQ, kPaddedSlots>(in, e0, q, p0, step, terms, h, acc);
      } else if (!fewer_inside(count, e0, b0, p0, step, terms, acc)) {
#pragma unroll
        for (int r = 0; r < kOutputs; ++r) {
          if (r < count) {
            acc[r] =
                ExactOutput<kPaddedSlots>(in, e0 + r * q, b0 + static_cast<std::int64_t>(r) * q, p0,
                                          terms, g.length, step, h, acc[r]);
          }
        }
      }
#pragma unroll
      for (int r = 0; r < kOutputs; ++r) {
        if (r < count) out[c + (s0 + r) * P] = acc[r];
      }
    };
    // Phases c0 ... c0 + kPhaseBlock - 1 of `group` where all their outputs are in the tile and
    // every term inside the row (Q = 1: the phases' bases are 0, their first taps c * down);
    // whether it took them.
    auto phase_block = [&](int c0, int group) {
      const int s0 = group * kOutputs;
      const std::int64_t s_first = tile_s0 + s0;
      // The last phase's 7th output is in the row, and so every other.
      if (S - s0 < kOutputs ||
          g.outputs - (c0 + kPhaseBlock - 1) - s_first * P <= (kOutputs - 1) * P) {
        return false;
      }
      int tap0[kPhaseBlock], terms[kPhaseBlock];
#pragma unroll
      for (int i = 0; i < kPhaseBlock; ++i) {
        const int p = (c0 + i) * g.down;
        terms[i] = chunk_terms(p);
        tap0[i] = p + m0 * g.up;
      }
      // Phase c0 has the most terms (its first tap is the lowest).
      if (!AllTermsInside(kOutputs, s_first - m0, 1, terms[0], g.length)) return false;
      T* const first_out = out + c0 + s0 * P;
      // 16-byte runs where the buffer's shift leaves c0 + s * P (multiples of 4) aligned.
      const bool vectors = SpanShift(row_y, 0) == 0;
      T acc[kPhaseBlock][kOutputs];
#pragma unroll
      for (int r = 0; r < kOutputs; ++r) {
#pragma unroll
        for (int i = 0; i < kPhaseBlock; ++i) acc[i][r] = m0 > 0 ? first_out[r * P + i] : T(0);
      }
      PhaseBlockOutputs(in, g.lead + g.halo_terms - 1 + s0, tap0, g.up, terms, h, acc);
#pragma unroll
      for (int r = 0; r < kOutputs; ++r) {
        if constexpr (sizeof(T) * kPhaseBlock == 16) {
          if (vectors) {
            StoreShared(static_cast<unsigned>(__cvta_generic_to_shared(first_out + r * P)),
                        make_float4(acc[0][r], acc[1][r], acc[2][r], acc[3][r]));
            continue;
          }
        }
#pragma unroll
        for (int i = 0; i < kPhaseBlock; ++i) first_out[r * P + i] = acc[i][r];
      }
      return true;
    };
    for (int w = threadIdx.x; w < items; w += blockDim.x) {
      if constexpr (kPhaseBlocks) {
        const int block = static_cast<int>(g.by_groups.Divide(w)), group = w - block * groups;
        const int c0 = block * kPhaseBlock;
        if (!phase_block(c0, group)) {
#pragma unroll
          for (int i = 0; i < kPhaseBlock; ++i) phase_item(c0 + i, group);
        }
      } else if constexpr (kPerWarp) {
        const int c = static_cast<int>(g.by_groups.Divide(w));
        phase_item(c, w - c * groups);
      } else {
        const int group = static_cast<int>(g.by_period.Divide(w));
        phase_item(w - group * P, group);
      }
    }
    if (last_chunk) {
      __syncthreads();  // the tile's outputs are in shared memory
      const std::int64_t left = g.outputs - tile_s0 * P;
      const int tile_outputs = left < S * P ? static_cast<int>(left) : S * P;
      // 16-bit data rounded from the float outputs (kLandedSamples), else as they are.
      StoreSpan(row_y, out_buffer, tile_outputs, threadIdx.x, blockDim.x);
    }
    tile = next_tile;
    chunk = next_chunk;
  }
}

// f(std::integral_constant<Kernel, k>()) with the tiled kernel k for geometry `g`: tiles of fewer
// than kOutputs outputs a phase (a phase a lane at a large Q: 96 kHz -> 11.025 kHz, S = 3) and
// phase blocks (g.phase_block) take one of their own, so that every other keeps the item code of
// whole groups of one phase.
template <class T, class Taps, int kQ, bool kPerWarp, class F>
decltype(auto) WithTiledKernel(const Geometry& g, F&& f) {
  constexpr auto kernel = UpfirdnKernel<T, Taps, kQ, kPerWarp>;
  if constexpr (kQ == 0 && !kPerWarp) {
    constexpr auto short_tiles = UpfirdnKernel<T, Taps, kQ, kPerWarp, true>;
    if (g.tile_s < kOutputs) return f(std::integral_constant<decltype(short_tiles), short_tiles>());
  }
  if constexpr (kQ == 1 && kPerWarp && sizeof(ComputeTypeOf<T>) == 4) {
    constexpr auto blocks = UpfirdnKernel<T, Taps, kQ, kPerWarp, false, true>;
    if (g.phase_block > 1) return f(std::integral_constant<decltype(blocks), blocks>());
  }
  return f(std::integral_constant<decltype(kernel), kernel>());
}

// The shared memory, in 16 bytes, a tiled launch (kPerWarp: the arrangement) stages `taps` in
// before its tile buffers: by phase for a phase a lane (StageUpfirdnTaps), else as StageTable
// stages them.
template <bool kPerWarp, class T, class Taps>
std::size_t TiledTapsBytes(const Taps& taps, const UpfirdnShape& shape) {
  if constexpr (!kPerWarp && kStagedByPhase<Taps>) return TapRowsBytes<T>(shape);
  return RoundUpTo16(StagedTableBytes(taps, static_cast<int>(shape.taps)));
}

}  // namespace upfirdn_kernels
}  // namespace ops
}  // namespace constmem
