// SPDX-License-Identifier: Apache-2.0
// Upfirdn's CUDA kernels, device code and the host arithmetic of their tiles, with no CUDA runtime
// call (upfirdn_gpu.cu launches them; tests run them on the CPU through
// constmem/testing/emulated_gpu.hpp).
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
// (PhaseBlockOutputs). Where Q is 1 to 3 the
// samples of a chunk of taps come into registers once for all 7 outputs (a window of 6 Q + U
// samples for 7 U FMAs) instead of once per FMA. An integer downsampling at Q of 4 and more (one
// phase: 96 kHz -> 8 kHz is Q = 12) stages its samples by residue, sample e at
// (e mod Q) * rows + e div Q (Geometry::residue_rows): a thread's 7 outputs, Q samples apart, read
// consecutive words of one residue's row at each term, and the lanes, 7 outputs apart, distinct
// banks, where in order lanes 7 Q apart meet up to gcd(7 Q, 32) to a bank. At Q of 4, 6 and 12
// (float32) a kernel compiled for that Q loads a window of samples into registers, as at Q of 1
// to 3, at constant offsets from residue 0, or at 12 slides rows of Q samples through them
// (ResidueOutputs). Which outputs the lanes of a warp
// take is the placement question (upfirdn_launcher.h, UpfirdnArrangement): one phase per warp, so
// that every lane reads the same tap (constant memory's broadcast, by value or from a bank), or
// consecutive phases per warp with the taps in shared memory. A phase a lane stages its taps by
// phase (StageUpfirdnTaps), so that lanes on consecutive phases read consecutive words.
//
// A filter of more than kHaloChunkTerms terms a phase (a long filter at a small `up`) is walked in
// chunks of kHaloChunkTerms terms: for each chunk the block stages the tile's samples with that
// chunk's halo, and carries every output's partial sum from chunk to chunk in the tile's output
// buffer: the same fused multiply-adds in the same order, so the results are unchanged. Shapes
// whose smallest tile does not fit shared memory (HaloTerms: one output of each phase beside a
// chunk of the halo) and shapes whose indices pass int run a direct kernel instead: one output a
// thread over a grid-stride loop, samples and taps read where they are (taps staged in shared
// memory only by that placement), the same fused multiply-adds in the same order.
//
// float16 and bfloat16 data are computed in float with float's tiles, registers and FMAs: a step's
// 16-bit samples land in a buffer of their own (16-byte asynchronous copies, in order), are
// converted once into one float tile buffer in the layout the step reads (in order, padded or by
// residue), and the outputs leave rounded to nearest even, 8 a 16-byte store; the direct kernel
// converts each sample as it reads it. The results are the CPU kernel's bit for bit.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "constmem/async_copy.cuh"
#include "constmem/host_device.hpp"
#include "constmem/numeric.hpp"
#include "constmem/shared_table.cuh"
#include "constmem/tile_staging.cuh"
#include "upfirdn/upfirdn_functor.h"

namespace constmem {
namespace ops {
namespace upfirdn_kernels {

// Threads a block: up to 256, fewer where that leaves fewer of them idle for a tile's items
// (BlockThreads).
constexpr int kThreads = 256;
// Outputs a thread: odd, so that the samples of lanes 7 Q apart fall in distinct banks for odd Q.
constexpr int kOutputs = 7;
// Taps a chunk: the window a chunk loads holds 6 Q + kChunk samples for 7 kChunk FMAs. T is the
// data or its compute type: float16 and bfloat16 are computed in float.
template <class T>
constexpr int kChunk = sizeof(ComputeTypeOf<T>) == 4 ? 16 : 8;
// Whether data of type T is staged through a landing buffer: 16-bit samples arrive there in
// 16-byte copies and are converted once into the float tile the kernel computes from (Geometry).
template <class T>
constexpr bool kLanded = !std::is_same<T, ComputeTypeOf<T>>::value;
// Shared memory for a tile's buffers (two of samples, one of outputs), not counting the halo each
// sample buffer carries (up to kHaloChunkTerms - 1 samples), nor the taps staged apart: with the
// halo inside the budget, a long filter at a small `up` (4,096 taps at 1/3) would leave room for
// one output a tile and read its samples a thousand times over.
constexpr std::size_t kTileBudgetBytes = 32 * 1024;
// The same for samples staged by residue (an integer downsampling at Q of 4 and more), whose tiles
// hold Q samples an output twice over: within 32 KiB 96 kHz -> 8 kHz (Q = 12) takes 224 outputs a
// tile, 32 threads' work, and its blocks waited at the barrier more than they issued; within
// 96 KiB up to kThreads threads' (upfirdn_bench on the H100: 0.192 -> 0.136 ms, 32 and 48 kHz ->
// 8 kHz 4% faster).
constexpr std::size_t kResidueTileBudgetBytes = 96 * 1024;
// The most shared memory the smallest tile of the tiled kernel may take beside the staged taps,
// within what the GPU offers: shapes that need more run the direct kernel. 96 KiB: every shape of
// rates up to 1,024 and 4,096 taps is tiled on a GPU of compute capability 9.0 (227 KiB a block),
// and those whose taps are not staged on 8.x too (99 KiB and more).
constexpr std::size_t kTiledMostBytes = 96 * 1024;
// Terms of a filter a step of the tiled kernel walks: 8 KiB of float32 halo a buffer, so that a
// tile's samples still outweigh the halo it stages again for each chunk. A longer halo staged whole
// leaves room for fewer blocks: 12,265 taps at up 1 (the longest that fits) took 41.2 ms against
// 27.8 ms for 12,266 taps in chunks in one run (upfirdn_bench --long-filters, H100,
// results/h100/upfirdn_bench_long_filters.json).
constexpr int kHaloChunkTerms = 2048;
// Shared memory an SM keeps aside for each resident block (1 KiB on GPUs of compute capability 8.0
// and newer), beyond the most a block may take.
constexpr std::size_t kReservedBytesPerBlock = 1024;

// The staged samples of a tile and a chunk of terms m0 ... m0 + halo_terms - 1: local index e is
// sample tile_first_base - m0 - (halo_terms - 1) - kChunk + e; the kChunk in front are never read
// for a term (a last, partial chunk's window may reach into them). Kernels with a run-time Q and a
// phase a warp (Padded) pad one element after every 32, so that lanes whose samples lie a multiple
// of 32 apart (Q = 160: 7 Q = 35 * 32) do not meet in one bank, or, with one phase, stage them by
// residue (ResidueRows; a copy a sample either way); the others are unpadded (lanes of a
// phase a lane read samples about Q / P apart; those of Q 1 to 3, 7 Q apart, meet at most 2-way at
// Q 2), address with constant offsets, and are staged 16 bytes a copy.
template <int kQ, bool kPerWarp>
constexpr bool kPadded = kQ == 0 && kPerWarp;
template <bool kPaddedSlots>
__host__ __device__ constexpr int Slot(int e) {
  return kPaddedSlots ? e + (e >> 5) : e;
}

// A launch's geometry, the same for every tile.
struct Geometry {
  std::int64_t length;         // n
  std::int64_t outputs;        // L
  std::int64_t tiles_per_row;  // ceil(ceil(L / P) / S)
  std::int64_t tiles;          // rows * tiles_per_row
  int taps, up, down;
  int period, stride;  // P, Q
  int halo_terms;      // terms a step stages the samples of: ceil(k / up), or kHaloChunkTerms
  int halo_chunks;     // steps a tile: ceil(ceil(k / up) / halo_terms)
  int tile_s;          // S
  int lead;            // samples staged before a chunk's halo (LeadSamples)
  int staged;          // samples staged a step: lead + halo_terms - 1 + S * Q
  int in_elements;     // elements of a sample buffer
  int tap_rows;        // taps staged by phase: ceil(k / up) rows (TapRows); 0: in their order
  int residue_rows;    // samples staged by residue: rows of this many (ResidueRows); 0: in order
  int tiles_offset;    // bytes before the tile buffers (the staged taps)
  int phase_block;     // phases an item: kPhaseBlock for an integer upsampling (PhaseBlocks), or 1
  // Each thread's item w names its phase c and group of outputs: by groups (a phase a warp) or by
  // P (a phase a lane); then c * down by up.
  FastDivisor by_groups, by_period, by_up, by_stride;
  // 16-bit data (kLanded): the bytes of the landing buffer after the staged taps, which holds a
  // step's samples as they are, in order and shifted as StageSpan shifts them; one tile buffer of
  // float follows it. 0 for float and double, whose samples are staged in the tile buffers.
  int landing_bytes;
};

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

// The terms a window of the residue kernel (a compiled Q of 4 and more) walks: a multiple of Q, so
// that every window starts at residue 0 (LeadSamples).
template <class T>
__host__ __device__ constexpr int ResidueChunk(int q) {
  return q * (kChunk<T> / q > 1 ? kChunk<T> / q : 1);
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
// that its loads are at constant offsets; where a window holds one chunk of Q terms (Q > kChunk /
// 2: 96 kHz -> 8 kHz), so that its 7 Q loads feed 7 Q FMAs, rows of Q samples slide through
// registers instead (SlidingRows: Q loads a chunk). With a run-time Q the 7 read consecutive
// entries of one residue's row a term. Either way the lanes, 7 entries apart, read distinct banks.
template <int kQ, class T, class Taps>
__device__ __forceinline__ void ResidueOutputs(const T* in, int rows, int q,
                                               const FastDivisor& by_q, int e0, std::int64_t b0,
                                               int tap0, int step, int terms, std::int64_t length,
                                               int count, const Taps& taps, T (&acc)[kOutputs]) {
  if (AllTermsInside(count, b0, q, terms, length)) {
    if constexpr (kQ >= 4) {
      constexpr int U = ResidueChunk<T>(kQ);
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
  constexpr int U = kChunk<T>;
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

// Phases an item of an integer upsampling (Q = 1, P a multiple of kPhaseBlock; float32): every
// phase's outputs share their bases, so one thread's 7 outputs of 4 consecutive phases read the
// same samples, and its 28 outputs lie in 7 runs of 4 consecutive words of the tile's output buffer
// (one 16-byte store each where the buffer is aligned). A phase an item at 8 kHz -> 96 kHz (12
// terms a phase) spent as many instructions on each item's phase, bounds and stores as on its
// FMAs.
constexpr int kPhaseBlock = 4;

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
  constexpr int U = kChunk<T>;
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

// The direct kernel's shape, all in int64.
struct DirectGeometry {
  std::int64_t rows, length, outputs, taps, up, down;
};

// One output a thread, over a grid-stride loop: UpfirdnOutput (upfirdn_functor.h) as it is written,
// the samples read from global memory, the taps from wherever `taps` reads them (staged in shared
// memory for that placement).
template <class In, class Taps>
__global__ void __launch_bounds__(kThreads)
    UpfirdnDirectKernel(const In* __restrict__ x, In* __restrict__ y, const DirectGeometry g,
                        const __grid_constant__ Taps taps) {
  using T = ComputeTypeOf<In>;
  unsigned char* const shared_bytes = DynamicSharedMemory();
  const auto& h = StageTable(taps, static_cast<int>(g.taps), shared_bytes);
  const std::int64_t total = g.rows * g.outputs;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t w = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; w < total;
       w += stride) {
    const std::int64_t row = w / g.outputs, i = w - row * g.outputs;
    const std::int64_t t = i * g.down;
    const std::int64_t p = t % g.up, b = t / g.up;
    T acc = T(0);
    if (p < g.taps) {
      const std::int64_t last_m = (g.taps - 1 - p) / g.up;
      const std::int64_t lo = b - g.length + 1 > 0 ? b - g.length + 1 : 0;
      const std::int64_t hi = b < last_m ? b : last_m;
      std::int64_t sample = row * g.length + b - lo;  // x[b - m] of this row
      std::int64_t tap = p + lo * g.up;               // h[p + m * up]
      for (std::int64_t m = lo; m <= hi; ++m, --sample, tap += g.up) {
        acc = fma(ToCompute<T>(x[sample]), h[static_cast<int>(tap)], acc);
      }
    }
    y[w] = FromCompute<In>(acc);
  }
}

// A tile plan: S, the outputs a thread, whether the lanes of each warp share a phase, and the terms
// a step stages the halo of. Sizes in int64: a plan whose bytes fit shared memory has sizes that
// fit int.
struct TilePlan {
  std::int64_t s = 0;
  bool per_warp = false;
  std::int64_t halo_terms = 0;
  std::size_t bytes = 0;  // the tile buffers
  std::int64_t lead = 0, staged = 0, in_elements = 0;
  std::int64_t residue_rows = 0;  // samples staged by residue (ResidueRows); 0: in order
  std::size_t landing_bytes = 0;  // 16-bit data: the landing buffer (Geometry::landing_bytes)
};

// How a tile's samples lie in a buffer: in order and shifted for 16-byte copies, in order with one
// element of padding after every 32, or by residue (Slot, ResidueRows).
enum class SampleLayout { kAligned, kPadded, kByResidue };

// The layout of the kernel for Q, P and the arrangement (kPadded<kQ, kPerWarp> at run time).
inline SampleLayout SampleLayoutFor(std::int64_t q, std::int64_t p_period, bool per_warp) {
  if (q <= 3 || !per_warp) return SampleLayout::kAligned;
  return p_period == 1 ? SampleLayout::kByResidue : SampleLayout::kPadded;
}

// The entries a residue's row of `staged` samples staged by residue at Q = q takes: at least
// ceil(staged / q), so that 32 consecutive samples, copied by 32 lanes to entries
// residue * rows + e div q, meet at most 2 to a bank: congruent to ceil(32 / q) modulo 32 below
// Q = 32 (their residues repeat), odd from it (their residues are distinct).
inline std::int64_t ResidueRows(std::int64_t staged, std::int64_t q) {
  const std::int64_t least = (staged + q - 1) / q;
  if (q >= 32) return least | 1;
  const std::int64_t wanted = (32 + q - 1) / q;
  return least + ((wanted - least) % 32 + 32) % 32;
}

// Whether samples of `layout` at Q = q are read in windows by a kernel compiled for that Q: 4, 6
// and 12 (the audio rates' integer downsampling; windows of 40 to 84 registers), float32, by
// residue.
template <class T>
bool ResidueWindows(std::int64_t q, SampleLayout layout) {
  return sizeof(ComputeTypeOf<T>) == 4 && (q == 4 || q == 6 || q == 12) &&
         layout == SampleLayout::kByResidue;
}

// The samples staged before a chunk's halo: kChunk (a window's reach past its first term), or for
// residue windows ResidueChunk's and up to Q - 1 more, so that lead + halo_terms is a multiple of
// Q: every window then starts at residue 0.
template <class T>
std::int64_t LeadSamples(std::int64_t q, std::int64_t halo_terms, SampleLayout layout) {
  if (!ResidueWindows<T>(q, layout)) return kChunk<T>;
  return ResidueChunk<T>(static_cast<int>(q)) + (q - halo_terms % q) % q;
}

// The Q a tiled kernel is compiled for (its kQ): 1 to 3, and Q where ResidueWindows; else 0, Q
// read from the geometry.
template <class T>
int CompiledStride(const UpfirdnShape& shape, bool per_warp) {
  const UpfirdnPhases phases = MakeUpfirdnPhases(shape.up, shape.down);
  const std::int64_t q = phases.stride;
  if (q <= 3) return static_cast<int>(q);
  return ResidueWindows<T>(q, SampleLayoutFor(q, phases.period, per_warp)) ? static_cast<int>(q)
                                                                           : 0;
}

// Calls f(std::integral_constant<int, kQ>()) with the kQ CompiledStride gives for `shape`
// (kPerWarp: the arrangement), instantiating residue windows only where they can be asked for: one
// phase a warp, float32.
template <class T, bool kPerWarp, class F>
decltype(auto) WithCompiledStride(const UpfirdnShape& shape, F&& f) {
  constexpr bool kWindows = kPerWarp && sizeof(ComputeTypeOf<T>) == 4;
  switch (CompiledStride<T>(shape, kPerWarp)) {
    case 1:
      return f(std::integral_constant<int, 1>());
    case 2:
      return f(std::integral_constant<int, 2>());
    case 3:
      return f(std::integral_constant<int, 3>());
    case 4:
      if constexpr (kWindows) return f(std::integral_constant<int, 4>());
      break;
    case 6:
      if constexpr (kWindows) return f(std::integral_constant<int, 6>());
      break;
    case 12:
      if constexpr (kWindows) return f(std::integral_constant<int, 12>());
      break;
    default:
      break;
  }
  return f(std::integral_constant<int, 0>());
}

// T: the data's type. Its samples are staged in two tile buffers of T, or for 16-bit data in a
// landing buffer of T and one tile buffer of float (kLanded); the outputs in a buffer of the
// compute type, shifted as the row of T they go to.
template <class T>
TilePlan PlanFor(std::int64_t s, std::int64_t q, std::int64_t p_period, std::int64_t halo_terms,
                 bool per_warp) {
  using C = ComputeTypeOf<T>;
  constexpr std::int64_t kAlign = 16 / static_cast<std::int64_t>(sizeof(T));
  TilePlan plan;
  plan.s = s;
  plan.per_warp = per_warp;
  plan.halo_terms = halo_terms;
  const SampleLayout layout = SampleLayoutFor(q, p_period, per_warp);
  plan.lead = LeadSamples<T>(q, halo_terms, layout);
  plan.staged = plan.lead + halo_terms - 1 + s * q;
  const std::int64_t last = plan.staged - 1;
  auto aligned = [&](std::int64_t elements) { return (elements + kAlign - 1) / kAlign * kAlign; };
  switch (layout) {
    case SampleLayout::kPadded:  // one element after every 32
      plan.in_elements = aligned(last + (last >> 5) + 1);
      break;
    case SampleLayout::kByResidue:
      plan.residue_rows = ResidueRows(plan.staged, q);
      plan.in_elements = aligned(q * plan.residue_rows);
      break;
    case SampleLayout::kAligned:  // shifted by up to kAlign - 1 (StageSpan)
      plan.in_elements = aligned(kAlign - 1 + plan.staged);
      break;
  }
  const std::int64_t out_elements = (kAlign - 1 + s * p_period + kAlign - 1) / kAlign * kAlign;
  if constexpr (kLanded<T>) {
    plan.landing_bytes = static_cast<std::size_t>(aligned(kAlign - 1 + plan.staged)) * sizeof(T);
    plan.bytes =
        plan.landing_bytes + static_cast<std::size_t>(plan.in_elements + out_elements) * sizeof(C);
  } else {
    plan.bytes = static_cast<std::size_t>(2 * plan.in_elements + out_elements) * sizeof(T);
  }
  return plan;
}

// The terms a step of the tiled kernel stages the halo of for `shape` with `most_bytes` of shared
// memory a block for its tile buffers: all ceil(k / up) up to kHaloChunkTerms where the smallest
// tile (S = 1: one output of each phase, Q samples and the halo) fits; past it chunks of
// kHaloChunkTerms where a tile of 32 threads' outputs (7 outputs each) fits with them, else the
// whole halo where the smallest tile fits with it (a large Q), else chunks beside the smallest
// tile (20,000 taps at 1/100); else 0: no tile. Tests of the chunks on short filters pass a
// smaller `chunk_terms`.
template <class T>
std::int64_t HaloTerms(const UpfirdnShape& shape, std::size_t most_bytes,
                       std::int64_t chunk_terms = kHaloChunkTerms) {
  const UpfirdnPhases phases = MakeUpfirdnPhases(shape.up, shape.down);
  const std::int64_t P = phases.period, Q = phases.stride;
  const std::int64_t most_terms = (shape.taps + shape.up - 1) / shape.up;
  // Either arrangement's tile: at a run-time Q one phase a warp pads its samples or stages them by
  // residue, a phase a lane aligns them (up to 16 bytes more for a short span).
  auto fits = [&](std::int64_t s, std::int64_t halo_terms) {
    return std::max(PlanFor<T>(s, Q, P, halo_terms, false).bytes,
                    PlanFor<T>(s, Q, P, halo_terms, true).bytes) <= most_bytes;
  };
  const std::int64_t chunk = chunk_terms;
  if (most_terms <= chunk) return fits(1, most_terms) ? most_terms : 0;
  const std::int64_t warp_outputs = 32 * kOutputs;
  if (fits((warp_outputs + P - 1) / P, chunk)) return chunk;
  if (fits(1, most_terms)) return most_terms;
  return fits(1, chunk) ? chunk : 0;
}

// Whether the tiled kernel takes `shape` with `most_bytes` of shared memory a block for its tile
// buffers: its int arithmetic holds (c * down for c < P, tap indices up to kChunk * up past the
// last tap) and a tile fits (HaloTerms).
template <class T>
bool TiledFits(const UpfirdnShape& shape, std::size_t most_bytes) {
  constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
  const UpfirdnPhases phases = MakeUpfirdnPhases(shape.up, shape.down);
  if ((phases.period - 1) * shape.down + shape.up > kIntMax) return false;
  if (shape.taps + (kChunk<T> + 1) * shape.up > kIntMax) return false;
  return HaloTerms<T>(shape, most_bytes) > 0;
}

// The tile for `shape`: the halo's terms as HaloTerms says for `most_bytes` (what the device
// leaves, at most kTiledMostBytes), then the largest S within kTileBudgetBytes plus that halo (and
// within `most_bytes`), in whole groups of 32 threads' outputs for kPhasePerWarp (so that every
// warp takes one phase) and of one thread's for kPhasePerLane; no more than a row needs; at least
// 1. Where Q is 4 or more and that tile holds fewer than kThreads threads' 7 outputs, a thread
// takes one output, and S is what kThreads threads take in one round: 96 kHz -> 8 kHz
// (Q = 12) fits 320 outputs a tile, 46 threads' 7. Where many phases leave room for fewer than 7
// outputs of each (11.025 kHz -> 96 kHz, P = 1,280, Q = 147: 5 in 32 KiB), S is 7 where an SM
// still holds as many blocks beside `taps_bytes` of staged taps: a thread's 7 outputs read each
// tap once and walk the terms without the row's bounds.
template <class T>
TilePlan ChooseTile(const UpfirdnShape& shape, bool per_warp,
                    std::size_t most_bytes = kTileBudgetBytes * 8,
                    std::int64_t chunk_terms = kHaloChunkTerms, std::size_t taps_bytes = 0) {
  const UpfirdnPhases phases = MakeUpfirdnPhases(shape.up, shape.down);
  const std::int64_t P = phases.period, Q = phases.stride;
  std::int64_t halo_terms = HaloTerms<T>(shape, std::min(most_bytes, kTiledMostBytes), chunk_terms);
  if (halo_terms == 0) halo_terms = (shape.taps + shape.up - 1) / shape.up;  // no tile fits
  const std::int64_t needed = std::max<std::int64_t>(1, (shape.outputs + P - 1) / P);
  auto plan = [&](std::int64_t s) { return PlanFor<T>(s, Q, P, halo_terms, per_warp); };
  // The bytes a staged sample takes: in two tile buffers, or landed and in one of float.
  constexpr std::size_t kSampleBytes =
      kLanded<T> ? sizeof(T) + sizeof(ComputeTypeOf<T>) : 2 * sizeof(T);
  const std::size_t halo_bytes = static_cast<std::size_t>(kChunk<T> + halo_terms) * kSampleBytes;
  const bool by_residue = SampleLayoutFor(Q, P, per_warp) == SampleLayout::kByResidue;
  const std::size_t budget =
      std::min((by_residue ? kResidueTileBudgetBytes : kTileBudgetBytes) + halo_bytes, most_bytes);
  // The most S the budget holds (bytes grow with S).
  std::int64_t most = 0;
  for (std::int64_t step = 1 << 20; step > 0; step >>= 1) {
    if (plan(most + step).bytes <= budget) most += step;
  }
  if (by_residue) most = std::min<std::int64_t>(most, kOutputs * kThreads);
  auto largest = [&](std::int64_t unit) {
    if (most < unit) return std::max<std::int64_t>(1, std::min(most, needed));
    return std::min(most / unit * unit, (needed + unit - 1) / unit * unit);
  };
  std::int64_t s = largest(per_warp ? 32 * kOutputs : kOutputs);
  if (s < kOutputs && needed >= kOutputs) {
    const std::size_t sm_bytes = most_bytes + taps_bytes + kReservedBytesPerBlock;
    auto resident = [&](std::size_t bytes) {
      return sm_bytes / (taps_bytes + bytes + kReservedBytesPerBlock);
    };
    const std::size_t seven = plan(kOutputs).bytes;
    if (seven <= most_bytes && resident(seven) >= resident(plan(s).bytes)) s = kOutputs;
  }
  TilePlan chosen = plan(s);
  // Whole groups of 32 threads a phase; with one phase (up dividing down) any tile is uniform.
  chosen.per_warp = per_warp && (s % (32 * kOutputs) == 0 || P == 1);
  return chosen;
}

// The rows a phase a lane stages its taps in by phase (StageUpfirdnTaps): ceil(k / up), where the
// P rows' entries are at most twice the taps; else 0, the taps in their order (fewer taps than
// phases: most rows' entries would be zeros).
inline std::int64_t TapRows(const UpfirdnShape& shape) {
  const std::int64_t rows = (shape.taps + shape.up - 1) / shape.up;
  const std::int64_t period = MakeUpfirdnPhases(shape.up, shape.down).period;
  return period * rows <= 2 * shape.taps ? rows : 0;
}

// `bytes` rounded up to 16: staged taps end where the 16-byte aligned tile buffers start.
constexpr std::size_t RoundUpTo16(std::size_t bytes) { return (bytes + 15) / 16 * 16; }

// The shared memory the taps of `shape` staged by phase take (TapRows), in 16 bytes.
template <class T>
std::size_t TapRowsBytes(const UpfirdnShape& shape) {
  const std::int64_t period = MakeUpfirdnPhases(shape.up, shape.down).period;
  const std::int64_t rows = TapRows(shape);
  const std::int64_t entries = rows > 0 ? period * rows : shape.taps;
  return RoundUpTo16(static_cast<std::size_t>(entries) * sizeof(ComputeTypeOf<T>));
}

// The shared memory, in 16 bytes, a tiled launch (kPerWarp: the arrangement) stages `taps` in
// before its tile buffers: by phase for a phase a lane (StageUpfirdnTaps), else as StageTable
// stages them.
template <bool kPerWarp, class T, class Taps>
std::size_t TiledTapsBytes(const Taps& taps, const UpfirdnShape& shape) {
  if constexpr (!kPerWarp && kStagedByPhase<Taps>) return TapRowsBytes<T>(shape);
  return RoundUpTo16(StagedTableBytes(taps, static_cast<int>(shape.taps)));
}

// The threads a block for a tile of `items` (each a thread's outputs of one phase): the multiple of
// 32 from 64 to 256 that leaves the smallest share of thread slots idle over the tile's rounds
// (128 items: 128 threads, not 256 of which half idle; 320: 160, two full rounds).
inline int BlockThreads(int items) {
  int best = kThreads;
  double best_busy = 0;
  for (int threads = kThreads; threads >= 64; threads -= 32) {
    const int rounds = (items + threads - 1) / threads;
    const double busy = static_cast<double>(items) / (static_cast<double>(rounds) * threads);
    if (busy > best_busy + 1e-9) {
      best = threads;
      best_busy = busy;
    }
  }
  return best;
}

// Whether a tiled launch of `shape` takes kPhaseBlock phases an item: an integer upsampling (Q = 1)
// of float32 whose P is a multiple of kPhaseBlock, one phase a warp (the lanes of a warp on one
// block of phases).
template <class T>
bool PhaseBlocks(const UpfirdnShape& shape, bool per_warp) {
  const UpfirdnPhases phases = MakeUpfirdnPhases(shape.up, shape.down);
  return sizeof(ComputeTypeOf<T>) == 4 && per_warp && phases.stride == 1 &&
         phases.period % kPhaseBlock == 0;
}

// The tiled kernel's geometry for `shape` with tile `plan` and `taps_bytes` of staged taps before
// the tile buffers (a plan TiledFits took: its sizes fit int).
template <class T>
Geometry MakeTiledGeometry(const UpfirdnShape& shape, const TilePlan& plan,
                           std::size_t taps_bytes) {
  const UpfirdnPhases phases = MakeUpfirdnPhases(shape.up, shape.down);
  Geometry g;
  g.length = shape.length;
  g.outputs = shape.outputs;
  g.tiles_per_row = ((shape.outputs + phases.period - 1) / phases.period + plan.s - 1) / plan.s;
  g.tiles = shape.rows * g.tiles_per_row;
  g.taps = static_cast<int>(shape.taps);
  g.up = static_cast<int>(shape.up);
  g.down = static_cast<int>(shape.down);
  g.period = static_cast<int>(phases.period);
  g.stride = static_cast<int>(phases.stride);
  g.halo_terms = static_cast<int>(plan.halo_terms);
  g.halo_chunks = static_cast<int>(((shape.taps + shape.up - 1) / shape.up + plan.halo_terms - 1) /
                                   plan.halo_terms);
  g.tile_s = static_cast<int>(plan.s);
  g.lead = static_cast<int>(plan.lead);
  g.staged = static_cast<int>(plan.staged);
  g.in_elements = static_cast<int>(plan.in_elements);
  g.tap_rows = static_cast<int>(TapRows(shape));
  g.residue_rows = static_cast<int>(plan.residue_rows);
  g.tiles_offset = static_cast<int>(taps_bytes);
  g.phase_block = PhaseBlocks<T>(shape, plan.per_warp) ? kPhaseBlock : 1;
  g.by_groups = FastDivisor(static_cast<std::uint32_t>((g.tile_s + kOutputs - 1) / kOutputs));
  g.by_period = FastDivisor(static_cast<std::uint32_t>(g.period));
  g.by_up = FastDivisor(static_cast<std::uint32_t>(g.up));
  g.by_stride = FastDivisor(static_cast<std::uint32_t>(g.stride));
  g.landing_bytes = static_cast<int>(plan.landing_bytes);
  return g;
}

// The threads a block for the tiled kernel with geometry `g`.
inline int TileThreads(const Geometry& g) {
  return BlockThreads(g.period / g.phase_block * ((g.tile_s + kOutputs - 1) / kOutputs));
}

}  // namespace upfirdn_kernels
}  // namespace ops
}  // namespace constmem
