// SPDX-License-Identifier: Apache-2.0
// Upfirdn's tiled launch planned on the host: the tile (S, the halo's chunks of terms, the layout
// of the staged samples and the shared memory they take), the Geometry the kernels read, the
// threads a block, and the constants both sides are built on. Plain C++ with no CUDA header, so
// that the host compiler alone builds and tests the planning (tests/cpp/upfirdn_plan_test.cc);
// upfirdn_tiled_kernel.cuh and upfirdn_direct_kernel.cuh hold the kernels it plans for.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "constmem/host_device.hpp"
#include "constmem/numeric.hpp"
#include "upfirdn/upfirdn_functor.h"

namespace constmem {
namespace ops {
namespace upfirdn_kernels {

// Threads a block: up to 256, fewer where that leaves fewer of them idle for a tile's items
// (ThreadsForItems).
constexpr int kThreads = 256;
// Outputs a thread: odd, so that the samples of lanes 7 Q apart fall in distinct banks for odd Q.
constexpr int kOutputs = 7;
// Terms a window of samples in registers serves: a thread's 7 outputs take the samples of this
// many consecutive terms into registers at once, 6 Q + kWindowTerms of them for 7 kWindowTerms
// FMAs. T is the data or its compute type: float16 and bfloat16 are computed in float.
template <class T>
constexpr int kWindowTerms = sizeof(ComputeTypeOf<T>) == 4 ? 16 : 8;
// The terms a window of the residue kernel (a compiled Q of 4 and more) serves: a multiple of Q,
// so that every window starts at residue 0 (LeadSamples).
template <class T>
CONSTMEM_HOST_DEVICE constexpr int ResidueWindowTerms(int q) {
  return q * (kWindowTerms<T> / q > 1 ? kWindowTerms<T> / q : 1);
}
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
// Phases an item of an integer upsampling (Q = 1, P a multiple of kPhaseBlock; float32): every
// phase's outputs share their bases, so one thread's 7 outputs of 4 consecutive phases read the
// same samples, and its 28 outputs lie in 7 runs of 4 consecutive words of the tile's output buffer
// (one 16-byte store each where the buffer is aligned). A phase an item at 8 kHz -> 96 kHz (12
// terms a phase) spent as many instructions on each item's phase, bounds and stores as on its
// FMAs.
constexpr int kPhaseBlock = 4;

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

// The staged samples of a tile and a chunk of terms m0 ... m0 + halo_terms - 1: local index e is
// sample tile_first_base - m0 - (halo_terms - 1) - lead + e (LeadSamples); the lead samples are
// never read for a term (a last, partial chunk's window may reach into them). Kernels with a
// run-time Q and a phase a warp (Padded) pad one element after every 32, so that lanes whose
// samples lie a multiple of 32 apart (Q = 160: 7 Q = 35 * 32) do not meet in one bank, or, with one
// phase, stage them by residue (ResidueRows; a copy a sample either way); the others are unpadded
// (lanes of a phase a lane read samples about Q / P apart; those of Q 1 to 3, 7 Q apart, meet at
// most 2-way at Q 2), address with constant offsets, and are staged 16 bytes a copy.
template <int kQ, bool kPerWarp>
constexpr bool kPadded = kQ == 0 && kPerWarp;

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

// The samples staged before a chunk's halo: kWindowTerms (a window's reach past its first term),
// or for residue windows ResidueWindowTerms and up to Q - 1 more, so that lead + halo_terms is a
// multiple of Q: every window then starts at residue 0.
template <class T>
std::int64_t LeadSamples(std::int64_t q, std::int64_t halo_terms, SampleLayout layout) {
  if (!ResidueWindows<T>(q, layout)) return kWindowTerms<T>;
  return ResidueWindowTerms<T>(static_cast<int>(q)) + (q - halo_terms % q) % q;
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
// buffers: its int arithmetic holds (c * down for c < P, tap indices up to kWindowTerms * up past
// the last tap) and a tile fits (HaloTerms).
template <class T>
bool TiledFits(const UpfirdnShape& shape, std::size_t most_bytes) {
  constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
  const UpfirdnPhases phases = MakeUpfirdnPhases(shape.up, shape.down);
  if ((phases.period - 1) * shape.down + shape.up > kIntMax) return false;
  if (shape.taps + (kWindowTerms<T> + 1) * shape.up > kIntMax) return false;
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
TilePlan ChooseTilePlan(const UpfirdnShape& shape, bool per_warp,
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
  const std::size_t halo_bytes =
      static_cast<std::size_t>(kWindowTerms<T> + halo_terms) * kSampleBytes;
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

// The threads a block for a tile of `items` (each a thread's outputs of one phase): the multiple of
// 32 from 64 to 256 that leaves the smallest share of thread slots idle over the tile's rounds
// (128 items: 128 threads, not 256 of which half idle; 320: 160, two full rounds).
inline int ThreadsForItems(int items) {
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
  return ThreadsForItems(g.period / g.phase_block * ((g.tile_s + kOutputs - 1) / kOutputs));
}

}  // namespace upfirdn_kernels
}  // namespace ops
}  // namespace constmem
