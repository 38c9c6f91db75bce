// SPDX-License-Identifier: Apache-2.0
// FirFilter's GPU tiles planned on the host: the launch shape (FirTuning), the samples a tile
// stages and their padded layout in shared memory, the shared memory a block takes, the walk of
// the tiles, and the threads a block a GPU's shared memory allows. Plain C++ with no CUDA header,
// so that the host compiler alone builds and tests the planning
// (tests/cpp/fir_filter_plan_test.cc); the kernels (fir_filter_tile.cuh describes them) index their
// buffers with these same functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "constmem/host_device.hpp"
#include "constmem/numeric.hpp"
#include "fir_filter/fir_filter_functor.h"

namespace constmem {
namespace ops {
namespace fir_kernels {

// Threads a block: 256, or 64 on GPUs that offer too little shared memory a block for tiles of
// 256 threads (64 KiB on compute capability 7.5; 99 KiB on 8.6 and 8.9, less than float64 filters
// of more than 64 taps need).
constexpr int kThreads = 256;
constexpr int kSmallBlockThreads = 64;

// The launch shape, the fastest bench/ops_bench.cu measured on an H200 (docs/performance.md,
// section 7). Per thread: consecutive outputs in registers, 112 bytes of them (28 float or 14
// double) in warp teams, 128 bytes (32 float or 16 double) in block teams. 112 bytes are an odd
// number of 16-byte vectors, so the vectors that eight threads load at the same offset fall in
// distinct banks as they lie; 128 bytes need a vector of padding after each thread's outputs, and
// every load then computes its padded offset. Taps are applied a ring segment at a time, 16 bytes'
// worth (4 float or 2 double) in warp teams: the smaller segment keeps the loop and the code for
// the leftover taps small enough for the instruction cache. Block teams run long filters in
// segments of 32 bytes: half the loads a tap, which matters more there than the code's size.
constexpr int kWarpTeamOutputBytes = 112;
constexpr int kBlockTeamOutputBytes = 128;
constexpr int kWarpTeamSegmentBytes = 16;
constexpr int kBlockTeamSegmentBytes = 32;
// Blocks of kThreads a multiprocessor that the kernels' registers must allow (__launch_bounds__).
constexpr int kMinBlocksOfThreads = 2;

// kTeam: the threads that share a tile, a warp or the block of kBlock threads. A warp synchronizes
// itself alone, so its warps never wait for each other; a block's tile carries less halo, which
// long filters need.
template <class T, int kTeam = kThreads, int kBlock = (kTeam == 32 ? kThreads : kTeam)>
struct FirTuning {
  static constexpr int kOutputs =
      (kTeam == 32 ? kWarpTeamOutputBytes : kBlockTeamOutputBytes) / static_cast<int>(sizeof(T));
  // Taps applied against one segment of a thread's ring of samples, and the samples it holds.
  static constexpr int kTapsPerSegment =
      (kTeam == 32 ? kWarpTeamSegmentBytes : kBlockTeamSegmentBytes) / static_cast<int>(sizeof(T));
  static constexpr int kLanes = 16 / static_cast<int>(sizeof(T));  // one 16-byte vector
  static constexpr int kTile = kTeam * kOutputs;
  static constexpr int kTeamsPerBlock = kBlock / kTeam;
  // A padding vector after each thread's outputs where they span an even number of vectors.
  static constexpr bool kPadded = kOutputs / kLanes % 2 == 0;
  // Buffers a team: a tile's samples arrive in one while the previous tile is computed from
  // another. Warp teams keep a third, from which the tile before leaves by a bulk store.
  static constexpr int kBuffers = kTeam == 32 ? 3 : 2;
  static_assert(kOutputs % kTapsPerSegment == 0 && kTapsPerSegment % kLanes == 0,
                "segments of whole vectors");
};

// A thread's samples form a ring of segments of kTapsPerSegment samples, one more than its outputs
// span, and one more again when the row's samples start inside a vector (shift > 0).
template <class T, int kShift, int kTeam>
CONSTMEM_HOST_DEVICE constexpr int RingSegments() {
  using Tune = FirTuning<T, kTeam>;
  return Tune::kOutputs / Tune::kTapsPerSegment + 1 + (kShift > 0 ? 1 : 0);
}

// Samples staged per tile, from the vector boundary at or before the tile's first sample: what
// the last thread's ring reads past its outputs, whole vectors.
template <class T, int kTeam>
CONSTMEM_HOST_DEVICE constexpr int StagedSamples(int taps) {
  using Tune = FirTuning<T, kTeam>;
  constexpr int kRing = (Tune::kOutputs / Tune::kTapsPerSegment + 2) * Tune::kTapsPerSegment;
  return (Tune::kTile - Tune::kOutputs + taps + kRing + Tune::kLanes - 1) / Tune::kLanes *
         Tune::kLanes;
}

// Shared-memory index of staged sample e, and of staged vector k: in padded layouts one vector of
// padding after every kOutputs samples, so that the 16-byte loads of a quarter warp (threads
// kOutputs samples apart) hit distinct banks.
template <class T, int kTeam>
CONSTMEM_HOST_DEVICE constexpr int Padded(int e) {
  using Tune = FirTuning<T, kTeam>;
  return Tune::kPadded ? e + e / Tune::kOutputs * Tune::kLanes : e;
}
template <class T, int kTeam>
CONSTMEM_HOST_DEVICE constexpr int PaddedVector(int k) {
  using Tune = FirTuning<T, kTeam>;
  return Tune::kPadded ? k + k / (Tune::kOutputs / Tune::kLanes) : k;
}
template <class T, int kTeam>
CONSTMEM_HOST_DEVICE constexpr int BufferElements(int taps) {
  return Padded<T, kTeam>(StagedSamples<T, kTeam>(taps)) + FirTuning<T>::kLanes;
}
// Whether data of type In is staged through a landing buffer (16-bit data, computed in float).
template <class In>
constexpr bool kLanded = !std::is_same<In, ComputeTypeOf<In>>::value;
// The elements of a team's landing buffer: a tile's samples of In, shifted by up to 7 (StageSpan).
template <class In, int kTeam>
CONSTMEM_HOST_DEVICE constexpr int LandingElements(int taps) {
  return (7 + StagedSamples<ComputeTypeOf<In>, kTeam>(taps) + 7) / 8 * 8;
}
// Each team's buffers, then (warp teams) one transaction barrier a buffer for its bulk copies; for
// 16-bit data each team's float buffer, then each team's landing buffer. In: the data's type.
template <class In, int kTeam, int kBlock = (kTeam == 32 ? kThreads : kTeam)>
constexpr std::size_t SharedBytes(int taps) {
  using T = ComputeTypeOf<In>;
  using Tune = FirTuning<T, kTeam, kBlock>;
  if constexpr (kLanded<In>) {
    return Tune::kTeamsPerBlock *
           (static_cast<std::size_t>(BufferElements<T, kTeam>(taps)) * sizeof(T) +
            static_cast<std::size_t>(LandingElements<In, kTeam>(taps)) * sizeof(In));
  }
  return Tune::kTeamsPerBlock * Tune::kBuffers *
         (static_cast<std::size_t>(BufferElements<T, kTeam>(taps)) * sizeof(T) +
          (kTeam == 32 ? sizeof(std::uint64_t) : 0));
}

// Filters of up to this many taps run in warp teams; longer ones in block teams, whose tiles carry
// less halo.
constexpr int kMaxWarpTeamTaps = 64;
// Two blocks a multiprocessor at every tap count on sm_80 and sm_90 (228 KiB, 1 KiB reserved a
// block).
static_assert(SharedBytes<float, kThreads>(kFirTiledMaxTaps) <= 113 * 1024, "two blocks an SM");
static_assert(SharedBytes<double, kThreads>(kFirTiledMaxTaps) <= 113 * 1024, "two blocks an SM");
static_assert(SharedBytes<float, 32>(kMaxWarpTeamTaps) <= 113 * 1024, "two blocks an SM");
static_assert(SharedBytes<double, 32>(kMaxWarpTeamTaps) <= 113 * 1024, "two blocks an SM");
static_assert(SharedBytes<Float16, kThreads>(kFirTiledMaxTaps) <= 113 * 1024, "two blocks an SM");
static_assert(SharedBytes<Float16, 32>(kMaxWarpTeamTaps) <= 113 * 1024, "two blocks an SM");
// The most shared memory a block of warp teams or of one block team asks for, at their longest
// filter (or chunk of a longer one).
template <class T, int kBlock>
constexpr std::size_t MostSharedBytes(bool warp_teams) {
  return warp_teams ? SharedBytes<T, 32, kBlock>(kMaxWarpTeamTaps)
                    : SharedBytes<T, kBlock, kBlock>(kFirTiledMaxTaps);
}
// Small blocks fit every GPU CUDA 13 builds for (64 KiB a block on compute capability 7.5).
constexpr std::size_t kSmallestSharedBytesPerBlock = 64 * 1024;
static_assert(
    MostSharedBytes<Float16, kSmallBlockThreads>(false) <= kSmallestSharedBytesPerBlock &&
        MostSharedBytes<Float16, kSmallBlockThreads>(true) <= kSmallestSharedBytesPerBlock &&
        MostSharedBytes<float, kSmallBlockThreads>(false) <= kSmallestSharedBytesPerBlock &&
        MostSharedBytes<double, kSmallBlockThreads>(false) <= kSmallestSharedBytesPerBlock &&
        MostSharedBytes<float, kSmallBlockThreads>(true) <= kSmallestSharedBytesPerBlock &&
        MostSharedBytes<double, kSmallBlockThreads>(true) <= kSmallestSharedBytesPerBlock,
    "small blocks fit 64 KiB");

// The threads a block of FirFilter's kernels for a filter of `taps` taps, where a block may take
// shared_bytes_per_block: kThreads where their tiles fit, else kSmallBlockThreads, else 0 (no
// kernel fits). Warp teams for short filters, block teams for long ones.
template <class T>
int FirFittingBlockThreads(std::int64_t taps, std::size_t shared_bytes_per_block) {
  const bool warp_teams = taps <= kMaxWarpTeamTaps;
  if (MostSharedBytes<T, kThreads>(warp_teams) <= shared_bytes_per_block) return kThreads;
  if (MostSharedBytes<T, kSmallBlockThreads>(warp_teams) <= shared_bytes_per_block) {
    return kSmallBlockThreads;
  }
  return 0;
}

// Tiles are walked as (row, column) pairs, stepping without a 64-bit division per tile: in a launch
// of `blocks` blocks of kTeamsPerBlock teams, team t starts at tile t (row-major) and steps as many
// tiles as there are teams.
template <class Tune>
struct TileWalk {
  std::int64_t tiles_per_row, row_step, column_step;
  CONSTMEM_HOST_DEVICE TileWalk(std::int64_t outputs, unsigned blocks) {
    tiles_per_row = (outputs + Tune::kTile - 1) / Tune::kTile;
    const std::int64_t teams = static_cast<std::int64_t>(blocks) * Tune::kTeamsPerBlock;
    row_step = teams / tiles_per_row;
    column_step = teams % tiles_per_row;
  }
  CONSTMEM_HOST_DEVICE void Start(std::int64_t team, std::int64_t* row,
                                  std::int64_t* column) const {
    *row = team / tiles_per_row;
    *column = team % tiles_per_row;
  }
  CONSTMEM_HOST_DEVICE void Advance(std::int64_t* row, std::int64_t* column) const {
    *row += row_step;
    *column += column_step;
    if (*column >= tiles_per_row) {
      *column -= tiles_per_row;
      ++*row;
    }
  }
};

}  // namespace fir_kernels
}  // namespace ops
}  // namespace constmem
