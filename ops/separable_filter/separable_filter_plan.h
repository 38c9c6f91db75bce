// SPDX-License-Identifier: Apache-2.0
// SeparableFilter's GPU launches planned on the host: the fused kernel's tiles (Tile) and the
// shared memory they take (SharedLayout), the tile a block's shared memory allows
// (FusedTileThreads), the Geometry every kernel reads and how a launch's work is split into tiles,
// strips and segments of rows (MakeGeometry, PlanTiles, PlanRegisterStrips, DecodeWork), the two
// passes' and the register kernel's launch constants, and the shapes the register kernel takes
// (RegisterChannels). Plain C++ with no CUDA header, so that the host compiler alone builds and
// tests the planning (tests/cpp/separable_filter_plan_test.cc); the kernels lay out their shared
// memory and decode their work with these same functions (CONSTMEM_HOST_DEVICE).
// separable_filter_tile_kernel.cuh, separable_filter_two_pass_kernels.cuh and
// separable_filter_register_kernel.cuh hold the kernels; separable_filter_gpu.cu launches them.
//
// A shape runs in the register kernel where RegisterChannels takes it (square filters of 3 to
// kRegisterMaxTaps taps on aligned rows of whole vectors), else in the fused kernel's large tile
// or, for filters of up to kSeparableSmallTileMaxTaps taps, its small one, where one fits the
// shared memory a block gets (from about 300 taps float32 on an H200 none does), else in the two
// passes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "constmem/host_device.hpp"
#include "constmem/numeric.hpp"
#include "separable_filter/separable_filter_functor.h"

namespace constmem {
namespace ops {
namespace separable_kernels {

// The fused kernel's launch shape. kRows rows of tmp (and of output) a step, kWidth elements a tile
// column, kRowOutputs outputs a thread in the row pass (a lane per row, the warps over the row's
// segments), kColumnOutputs rows of 4 elements a thread in the column pass (kWidth / 4 threads per
// row group). The large tile (256 threads, 32 x 128) carries (kw - 1) / 128 of halo along W and,
// walking down the whole height, (kh - 1) / H along H; it needs 76 KiB of shared memory for
// float32 filters of 63 x 63 taps, 117 KiB at 127 x 127. The small one (64 threads, 16 x 32) fits
// 64 KiB a block (compute capability 7.5) for every filter it takes (up to
// kSeparableSmallTileMaxTaps taps, one channel a row): 62 KiB for float64 at 127 x 127.
template <int kThreads_, int kWidth_, int kRows_, int kRowOutputs_, int kColumnOutputs_>
struct Tile {
  static constexpr int kThreads = kThreads_;
  static constexpr int kWidth = kWidth_;
  static constexpr int kRows = kRows_;
  static constexpr int kRowOutputs = kRowOutputs_;
  static constexpr int kColumnOutputs = kColumnOutputs_;
  static constexpr int kColumnLanes = 4;
  static constexpr int kWarps = kThreads / 32;
  // Row pass: kRows lanes take one segment of kRowOutputs outputs in kRows rows.
  static constexpr int kRowSlots = kThreads / kRows;
  static_assert(32 % kRows == 0 || kRows % 32 == 0, "lanes per row pass slot");
  static_assert(kRows <= 32, "a lane per row of a step");
  static_assert(kThreads == kWidth / kColumnLanes * (kRows / kColumnOutputs),
                "the column pass covers the step exactly");
  static_assert(kWidth % kRowOutputs == 0 && kRowOutputs % 4 == 0, "whole vectors");
  // A row of tmp: kWidth elements and 4 of padding, so that 8 consecutive rows' 16-byte vectors
  // at one column fall in distinct banks (the row pass's stores).
  static constexpr int kTmpPitch = kWidth + 4;
};
using LargeTile = Tile<256, 128, 32, 16, 4>;
using SmallTile = Tile<64, 32, 16, 8, 2>;
// Blocks of the large tile a multiprocessor that the registers must allow, computing in float
// (float32 and uint8 images; the compile definition CONSTMEM_SEPARABLE_MIN_BLOCKS sets another, to
// compare launch shapes on a GPU). Three (80 registers, no spill) against two: 4-10% faster for
// float32 and 16-40% for uint8 at k <= 31 on the H200, 2% slower at k = 63. float64 keeps two: at
// 80 registers it spills.
#ifndef CONSTMEM_SEPARABLE_MIN_BLOCKS
#define CONSTMEM_SEPARABLE_MIN_BLOCKS 3
#endif
template <class T>
constexpr int kMinLargeBlocks = sizeof(T) == 8 ? 2 : CONSTMEM_SEPARABLE_MIN_BLOCKS;
// Slide (separable_filter_device.cuh) applies taps kTapsPerRingSegment at a time: a thread's ring
// of samples in registers is RingSegments segments of this many samples, and each step applies
// one segment's worth of taps, then refills that segment.
constexpr int kTapsPerRingSegment = 4;
// Channels-last images of up to this many channels run as rows of interleaved pixels; more
// channels, each channel as a plane (the halo of interleaved rows grows with C).
constexpr int kMaxInterleavedChannels = 8;

// Segments of the ring for R outputs a thread: the fewest that hold the R + K - 1 samples a step of
// K = kTapsPerRingSegment taps reads.
template <int R>
CONSTMEM_HOST_DEVICE constexpr int RingSegments() {
  constexpr int K = kTapsPerRingSegment;
  return (R + 2 * K - 2) / K;  // ceil((R + K - 1) / K)
}

// Where image i's taps start: its row taps at i * row_stride, its column taps at
// i * column_stride + column_first (strides 0 for shared taps).
struct TapLayout {
  int row_stride, column_stride, column_first;
};
// One table: row taps, then column taps, image after image.
inline TapLayout JoinedTaps(const SeparableShape& s) {
  const int stride = s.per_image_taps ? static_cast<int>(s.kw + s.kh) : 0;
  return {stride, stride, static_cast<int>(s.kw)};
}
// Two tables, one of row taps and one of column taps.
inline TapLayout SeparateTaps(const SeparableShape& s) {
  return {s.per_image_taps ? static_cast<int>(s.kw) : 0,
          s.per_image_taps ? static_cast<int>(s.kh) : 0, 0};
}

// What a launch tells the kernel. A "plane" is what a block filters: a plane of the planes layout,
// an image of interleaved channels, or one channel of a channels-last image. Element e of a row
// (0 <= e < row_elements) is pixel e / interleaved, channel e % interleaved, at offset
// e * element_stride from the row's start.
struct Geometry {
  std::int64_t planes;            // planes to filter
  std::int64_t planes_per_image;  // for the image (and its taps) of a plane
  std::int64_t image_stride;      // elements between images
  std::int64_t sub_stride;        // elements between the planes of an image
  std::int64_t row_stride;        // elements between rows
  int height;
  int width;           // pixels a row
  int interleaved;     // channels interleaved in a row (1, or C <= kMaxInterleavedChannels)
  int element_stride;  // 1, or C for a channel of a channels-last image
  int row_elements;    // width * interleaved
  int kw, kh, cw, ch;
  TapLayout taps;
  SeparableBorder border;
  int tile_columns;  // tiles along a row
  int segments;      // segments of rows along H
  int segment_rows;
  std::int64_t work;  // planes * segments * tile_columns
  // Shared memory: staged rows' pitch and width (elements of StagedType), the map's size.
  int staged_pitch, staged_width, map_entries;
  bool vector_input;   // narrow rows start on 4-byte boundaries and are contiguous: 4-byte copies
  bool vector_output;  // rows start on 4-element boundaries and element_stride is 1
};

// Work item `work` of a launch over g.work items (tile columns fastest, then segments of rows,
// then planes): where its plane starts and where its image's row and column taps start.
struct WorkItem {
  int tile_column, segment;
  std::int64_t plane_offset;
  int row_taps, column_taps;
};
CONSTMEM_HOST_DEVICE WorkItem DecodeWork(std::int64_t work, const Geometry& g) {
  WorkItem item;
  item.tile_column = static_cast<int>(work % g.tile_columns);
  const std::int64_t rest = work / g.tile_columns;
  item.segment = static_cast<int>(rest % g.segments);
  const std::int64_t plane = rest / g.segments;
  const std::int64_t image = plane / g.planes_per_image;
  item.plane_offset = image * g.image_stride + (plane - image * g.planes_per_image) * g.sub_stride;
  item.row_taps = static_cast<int>(image) * g.taps.row_stride;
  item.column_taps = static_cast<int>(image) * g.taps.column_stride + g.taps.column_first;
  return item;
}

// Elements a tile's row pass covers: kWidth, or whole groups of interleaved * kRowOutputs.
template <class Tile>
CONSTMEM_HOST_DEVICE constexpr int CoveredElements(int interleaved) {
  const int group = interleaved * Tile::kRowOutputs;
  return interleaved == 1 ? Tile::kWidth : (Tile::kWidth + group - 1) / group * group;
}

// What a row is staged as: the data's own elements, the narrow ones (uint8, float16, bfloat16) as
// their bits, converted as the row pass reads them.
template <class In, class T>
using StagedType = In;
// Elements of a 4-byte word of staged narrow rows (their copies' unit); 1 for float and double.
template <class In>
constexpr int kWordElements = sizeof(In) < 4 ? 4 / static_cast<int>(sizeof(In)) : 1;

template <class Tile, class In, class T>
struct SharedLayout {
  int staged_width, staged_pitch, map_entries;
  std::size_t ring_bytes, staged_bytes, map_bytes;
  CONSTMEM_HOST_DEVICE SharedLayout(int interleaved, int kw, int kh) {
    using Staged = StagedType<In, T>;
    const int covered = CoveredElements<Tile>(interleaved);
    staged_width = covered + (kw - 1) * interleaved;
    // What the row pass's ring loads past the taps (and, for narrow elements, the up to E - 1 a
    // staged row starts before its first element, for whole 4-byte words of E), then an odd
    // number of 4-byte words: the 32 rows' lanes of the row pass read 32 banks.
    const int reach =
        covered + (kw + RingSegments<Tile::kRowOutputs>() * kTapsPerRingSegment) * interleaved;
    constexpr int E = kWordElements<Staged>;
    staged_pitch = sizeof(Staged) < 4 ? ((reach + 2 * (E - 1)) / E | 1) * E : reach | 1;
    map_entries = (staged_width + 3) / 4 * 4;
    ring_bytes = static_cast<std::size_t>(Tile::kRows + kh - 1) * Tile::kTmpPitch * sizeof(T);
    staged_bytes =
        (static_cast<std::size_t>(Tile::kRows) * staged_pitch * sizeof(Staged) + 15) / 16 * 16;
    map_bytes = static_cast<std::size_t>(map_entries) * sizeof(int);
  }
  CONSTMEM_HOST_DEVICE std::size_t Bytes() const { return ring_bytes + staged_bytes + map_bytes; }
};

// The geometry of `shape` with `interleaved` channels in a row (1 or C), its taps laid out as
// `taps` says.
inline Geometry MakeGeometry(const SeparableShape& s, bool interleave, TapLayout taps) {
  Geometry g{};
  const bool planes = s.layout == SeparableLayout::kPlanes;
  const std::int64_t hw = s.height * s.width;
  g.height = static_cast<int>(s.height);
  g.width = static_cast<int>(s.width);
  if (planes) {
    g.planes = s.images * s.channels;
    g.planes_per_image = s.channels;
    g.image_stride = s.channels * hw;
    g.sub_stride = hw;
    g.row_stride = s.width;
    g.interleaved = 1;
    g.element_stride = 1;
  } else if (interleave) {
    g.planes = s.images;
    g.planes_per_image = 1;
    g.image_stride = hw * s.channels;
    g.sub_stride = 0;
    g.row_stride = s.width * s.channels;
    g.interleaved = static_cast<int>(s.channels);
    g.element_stride = 1;
  } else {
    g.planes = s.images * s.channels;
    g.planes_per_image = s.channels;
    g.image_stride = hw * s.channels;
    g.sub_stride = 1;
    g.row_stride = s.width * s.channels;
    g.interleaved = 1;
    g.element_stride = static_cast<int>(s.channels);
  }
  g.row_elements = g.width * g.interleaved;
  g.kw = static_cast<int>(s.kw);
  g.kh = static_cast<int>(s.kh);
  g.cw = (g.kw - 1) / 2;
  g.ch = (g.kh - 1) / 2;
  g.taps = taps;
  g.border = s.border;
  return g;
}

// Work items of strips of `span` elements a row: segments of rows, whole heights where the strips
// give each of `resident` workers `per_worker` items, else shorter ones but each at least
// `shortest` rows (a segment computes kh - 1 rows of tmp beyond its outputs).
inline void PlanSegments(Geometry* g, int span, std::int64_t resident, int per_worker,
                         std::int64_t shortest) {
  g->tile_columns = (g->row_elements + span - 1) / span;
  const std::int64_t strips = g->planes * g->tile_columns;
  const std::int64_t most_segments = std::max<std::int64_t>(1, g->height / shortest);
  const std::int64_t segments =
      std::min<std::int64_t>(most_segments, (per_worker * resident + strips - 1) / strips);
  g->segment_rows = static_cast<int>((g->height + segments - 1) / segments);
  g->segments = (g->height + g->segment_rows - 1) / g->segment_rows;
  g->work = strips * g->segments;
}

// Splits the fused kernel's work for a launch of `resident` blocks at once: tiles along a row, and
// segments of rows, whole heights where the strips fill the GPU twice over, else shorter ones but
// each at least four halos long; and whether x and y take vector loads and stores.
template <class Tile, class In>
void PlanTiles(Geometry* g, std::int64_t resident, const In* x, const In* y) {
  PlanSegments(g, Tile::kWidth, resident, 2, std::max<std::int64_t>(Tile::kRows, 4 * (g->kh - 1)));
  g->vector_input = reinterpret_cast<std::uintptr_t>(x) % 4 == 0 &&
                    g->row_stride * static_cast<std::int64_t>(sizeof(In)) % 4 == 0 &&
                    g->element_stride == 1;
  g->vector_output = g->element_stride == 1 && g->row_stride % 4 == 0 &&
                     reinterpret_cast<std::uintptr_t>(y) % (4 * sizeof(In)) == 0;
  const SharedLayout<Tile, In, ComputeTypeOf<In>> layout(g->interleaved, g->kw, g->kh);
  g->staged_pitch = layout.staged_pitch;
  g->staged_width = layout.staged_width;
  g->map_entries = layout.map_entries;
}

// The tile and the rows' form for `shape` where `shared_bytes_per_block` holds them: large tiles,
// else small; interleaved channels where C <= kMaxInterleavedChannels and they fit, else one
// channel at a time. Filters longer than kSeparableSmallTileMaxTaps along either axis take only
// the large tile: on the H200 it beats the two passes wherever it fits (float32 [32, 3, 1080,
// 1920]: 5.14 against 7.76 ms at 129 taps, 10.07 against 12.69 ms at 255), the small one only up
// to about 191 taps. Returns the tile's threads (LargeTile::kThreads or SmallTile::kThreads), or
// 0 where nothing fits.
template <class In, class T>
int FusedTileThreads(const SeparableShape& s, std::size_t shared_bytes_per_block,
                     bool* interleave) {
  const int kw = static_cast<int>(s.kw), kh = static_cast<int>(s.kh);
  const bool can_interleave =
      s.layout == SeparableLayout::kChannelsLast && s.channels <= kMaxInterleavedChannels;
  const bool small_tile = s.kw <= kSeparableSmallTileMaxTaps && s.kh <= kSeparableSmallTileMaxTaps;
  for (int threads : {LargeTile::kThreads, SmallTile::kThreads}) {
    if (threads == SmallTile::kThreads && !small_tile) break;
    for (bool inter : {true, false}) {
      if (inter && !can_interleave) continue;
      const int interleaved = inter ? static_cast<int>(s.channels) : 1;
      const std::size_t bytes = threads == LargeTile::kThreads
                                    ? SharedLayout<LargeTile, In, T>(interleaved, kw, kh).Bytes()
                                    : SharedLayout<SmallTile, In, T>(interleaved, kw, kh).Bytes();
      if (bytes <= shared_bytes_per_block) {
        *interleave = inter;
        return threads;
      }
    }
  }
  return 0;
}

// Whether the fused kernel may take `s` where a tile fits: every filter, unless the compile
// definition CONSTMEM_SEPARABLE_FUSED_MAX_TAPS bounds it (to compare with the two passes on a GPU).
#ifndef CONSTMEM_SEPARABLE_FUSED_MAX_TAPS
#define CONSTMEM_SEPARABLE_FUSED_MAX_TAPS kSeparableMaxTaps
#endif
inline bool Fused(const SeparableShape& s) {
  return s.kw <= CONSTMEM_SEPARABLE_FUSED_MAX_TAPS && s.kh <= CONSTMEM_SEPARABLE_FUSED_MAX_TAPS;
}

// ---- Filters no tile fits: two passes (separable_filter_two_pass_kernels.cuh) ----

// Threads a block of either pass; warps are independent.
constexpr int kTwoPassThreads = 128;
// Consecutive outputs a lane of the row pass computes, an odd number: the lanes' shared-memory
// loads, kRowPassOutputs elements apart, hit distinct banks.
constexpr int kRowPassOutputs = 9;
// Outputs of a row a warp of the row pass owns.
constexpr int kRowSegment = 32 * kRowPassOutputs;
// Row taps a warp stages samples for at once: longer filters in chunks of this many, so that a
// warp's samples fit shared memory whatever the filter's length.
constexpr int kRowChunkTaps = 512;
// What a warp stages for a chunk: its segment, the chunk's halo and what Slide's ring reads past.
constexpr int kRowStaged =
    kRowSegment + kRowChunkTaps + RingSegments<kRowPassOutputs>() * kTapsPerRingSegment;
// Consecutive rows of one column a lane of the column pass computes.
constexpr int kColumnPassOutputs = 16;
// The scratch of one batch of planes: at most this much, or one plane.
constexpr std::size_t kMostScratchBytes = std::size_t{256} << 20;

// The row pass's shared memory a block (static: within the 48 KiB a block gets without asking).
template <class T>
constexpr std::size_t RowPassSharedBytes() {
  return static_cast<std::size_t>(kTwoPassThreads / 32) * kRowStaged * sizeof(T);
}

// ---- Short square filters: rows in registers (separable_filter_register_kernel.cuh) ----

// Threads a block of the register kernel: four warps, each on strips of its own.
constexpr int kRegisterThreads = 128;
// The longest filter it takes along each axis (3, 5, 7 or 9 taps, square).
constexpr int kRegisterMaxTaps = 9;
// Filters the register kernel may take: up to kRegisterMaxTaps, unless the compile definition
// CONSTMEM_SEPARABLE_REGISTER_MAX_TAPS bounds them (0: none, to compare with the fused kernel on a
// GPU).
#ifndef CONSTMEM_SEPARABLE_REGISTER_MAX_TAPS
#define CONSTMEM_SEPARABLE_REGISTER_MAX_TAPS kRegisterMaxTaps
#endif
// Elements a lane of float16 or bfloat16 rows: 4 (8-byte copies and stores, float32's 4 floats a
// lane), or 8 where the compile definition CONSTMEM_SEPARABLE_SIXTEEN_BIT_VECTOR says so (16-byte
// ones, uint8's 8 floats a lane), to compare the two on a GPU.
#ifndef CONSTMEM_SEPARABLE_SIXTEEN_BIT_VECTOR
#define CONSTMEM_SEPARABLE_SIXTEEN_BIT_VECTOR 4
#endif
template <class In>
constexpr int kRegisterVector = sizeof(In) == 1   ? 8
                                : sizeof(In) == 2 ? CONSTMEM_SEPARABLE_SIXTEEN_BIT_VECTOR
                                                  : 16 / static_cast<int>(sizeof(In));
// Rows a lane's copies run ahead: enough bytes in flight to cover the memory's latency (16-bit
// rows keep float32's 64 bytes a lane).
template <class In>
constexpr int kRegisterStages = sizeof(In) == 1   ? 8
                                : sizeof(In) == 2 ? 32 / kRegisterVector<In>
                                                  : 4;
// Lanes at either end of a warp that only hold the halo: (kK / 2) * channels elements.
template <class In>
CONSTMEM_HOST_DEVICE constexpr int RegisterHaloLanes(int k, int channels) {
  return ((k / 2) * channels + kRegisterVector<In> - 1) / kRegisterVector<In>;
}
// Elements of a row a warp's strip computes: a vector for each lane but the halo ones.
template <class In>
CONSTMEM_HOST_DEVICE constexpr int RegisterSpan(int k, int channels) {
  return (32 - 2 * RegisterHaloLanes<In>(k, channels)) * kRegisterVector<In>;
}

// Blocks a multiprocessor that the registers must allow: enough warps to keep the FMAs and the
// copies going (the longer rings of tmp take more registers; RGB rows of 8 elements a lane at 9
// taps, whose samples hold 8 + 2 * 12 floats, spilled 1 KiB a thread within 4 blocks' registers).
template <class In>
constexpr int RegisterMinBlocks(int k, int channels) {
  constexpr bool kEight = kRegisterVector<In> == 8;  // 8 floats a lane, as uint8's
  return kEight && channels == 3 && k >= 9 ? 3
         : k >= 7                          ? 4
         : kEight                          ? (k <= 3 ? 6 : 5)
                                           : (k <= 3 ? 8 : 5);
}

// The channels the register kernel interleaves for `s`: 1 (planes, or channels-last with one
// channel), 3 (channels-last RGB), or 0 where it does not take `s`: a square filter of 3 to
// kRegisterMaxTaps taps on rows of whole vectors, x and y aligned to them.
template <class In>
int RegisterChannels(const SeparableShape& s, const In* x, const In* y) {
  constexpr std::uintptr_t kBytes = kRegisterVector<In> * sizeof(In);
  const bool fits = sizeof(In) <= 4 && s.kw == s.kh && s.kw >= 3 && s.kw <= kRegisterMaxTaps &&
                    s.kw % 2 == 1 && s.width % kRegisterVector<In> == 0 &&
                    reinterpret_cast<std::uintptr_t>(x) % kBytes == 0 &&
                    reinterpret_cast<std::uintptr_t>(y) % kBytes == 0;
  if (!fits) return 0;
  if (s.layout == SeparableLayout::kPlanes || s.channels == 1) return 1;
  return s.channels == 3 ? 3 : 0;
}

// The register kernel's work for a launch of `resident` warps at once: strips of RegisterSpan
// elements, and segments of rows, whole heights where the strips give every warp eight tasks,
// else shorter ones (so that warps finish together) but each at least four halos long.
template <class In>
void PlanRegisterStrips(Geometry* g, std::int64_t resident) {
  PlanSegments(g, RegisterSpan<In>(g->kw, g->interleaved), resident, 8,
               std::max<std::int64_t>(16, 4 * (g->kh - 1)));
}

}  // namespace separable_kernels
}  // namespace ops
}  // namespace constmem
