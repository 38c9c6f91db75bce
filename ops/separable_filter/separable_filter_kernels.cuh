// SPDX-License-Identifier: Apache-2.0
// SeparableFilter's CUDA kernels: the fused pass and the two passes, device code and the host
// arithmetic of their launch shapes, with no CUDA runtime call (separable_filter_gpu.cu launches
// them; tests run them on the CPU through constmem/testing/emulated_gpu.hpp).
//
// A block owns a strip of kWidth consecutive elements of a row (a tile column) of one plane, over
// a segment of rows (usually the whole height), and walks down it kRows rows a step:
//   1. the input rows of the step, kWidth elements plus the halo of kw - 1 pixels, are staged in
//      shared memory (asynchronous copies, zeros or folded columns through a column map the block
//      computes once per strip; uint8, float16 and bfloat16 as their bits, 4-byte copies of 4 or
//      2 elements, converted to float as the row pass reads them);
//   2. the row pass turns them into kRows new rows of tmp, kept in a ring of kRows + kh - 1 rows
//      of shared memory: the rows the column pass still needs stay, so each input pixel is read
//      about once (the row halo excepted) and each row of tmp computed once per segment;
//   3. the column pass writes up to kRows output rows from the ring, straight to global memory.
// The next step's staging is issued before the column pass, so the copies overlap it.
//
// Both passes keep several outputs a thread in registers, with a ring of samples (Slide below):
// every tap, read with a warp-uniform index (a constant-bank broadcast, a by-value parameter or a
// global read), feeds R FMAs, and each sample loaded from shared memory feeds R of them. In the row
// pass a thread computes kRowOutputs outputs along W (the 32 lanes of a warp take 32 rows, so
// their scalar loads hit 32 banks: the staged rows have an odd pitch); in the column pass
// kColumnOutputs rows of 4 consecutive elements (a warp reads whole rows of tmp, 16 bytes a lane).
//
// Rows are contiguous elements: W pixels of one channel (planes), or W pixels of C <= 8 interleaved
// channels (channels-last, a tap along W then C elements on). Channels-last with more channels
// runs each channel as a plane of its own, C elements between pixels (correct at any C; its loads
// are strided).
//
// Square filters of 3 to 9 taps on aligned rows of whole vectors of one channel or of three
// interleaved ones take a kernel with no shared tile instead (SeparableRegisterKernel below): rows
// in registers, the halo from the lanes beside.
//
// Every kernel computes in ComputeTypeOf<In> (float for float16, bfloat16 and uint8), reads an
// element with ToCompute and writes one with FromCompute: the CPU kernel's operations.
//
// Filters whose tiles do not fit shared memory (from about 300 taps float32 on an H200; past
// kSeparableSmallTileMaxTaps only the large tile is tried) run in two passes through an
// intermediate in global memory (LaunchTwoPass below), with the same FMAs in the same order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "constmem/async_copy.cuh"
#include "separable_filter/separable_filter_functor.h"

namespace constmem {
namespace ops {
namespace separable_kernels {

// The launch shape. kRows rows of tmp (and of output) a step, kWidth elements a tile column,
// kRowOutputs outputs a thread in the row pass (a lane per row, the warps over the row's
// segments), kColumnOutputs rows of 4 elements a thread in the column pass (kWidth / 4 threads per
// row group). The large tile (256 threads, 32 x 128) carries (kw - 1) / 128 of halo along W and,
// walking down the whole height, (kh - 1) / H along H; it needs 74 KiB of shared memory for
// float32 filters of 63 x 63 taps, 114 KiB at 127 x 127. The small one (64 threads, 16 x 32) fits
// 64 KiB a block (compute capability 7.5) for every filter: 57 KiB for float64 at 127 x 127.
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
// Taps are applied in chunks of kChunk: a turn of a thread's ring of samples.
constexpr int kChunk = 4;
// Channels-last images of up to this many channels run as rows of interleaved pixels; more
// channels, each channel as a plane (the halo of interleaved rows grows with C).
constexpr int kMaxInterleavedChannels = 8;

template <int R>
__host__ __device__ constexpr int RingSegments() {
  return (R + 2 * kChunk - 2) / kChunk;  // ceil((R + kChunk - 1) / kChunk)
}

// N values of one sample: one element (row pass) or kColumnLanes consecutive ones (column pass).
// Aligned for one vector load or store (two for four doubles).
template <class T, int N>
struct alignas(sizeof(T) * N < 16 ? sizeof(T) * N : 16) Lanes {
  T v[N];
};

// acc[r] = sum_j fma(load(r + j), taps[first_tap + j], acc[r]) for j = 0 .. count-1, in order. A
// ring of S segments of kChunk samples in registers: the chunk of taps c .. c + kChunk - 1 reads
// segments s .. s + S - 1 (mod S), then segment s takes the samples S * kChunk further on. A whole
// turn of the ring an iteration keeps every register index a constant. `load` is called for
// samples up to count + S * kChunk - 1 and must stay in bounds there (their values are unused).
template <int R, class T, int N, class Taps, class Load>
__device__ __forceinline__ void Slide(Lanes<T, N> (&acc)[R], const Taps& taps, int first_tap,
                                      int count, const Load& load) {
  constexpr int K = kChunk;
  constexpr int S = RingSegments<R>();
  Lanes<T, N> ring[S][K];
#pragma unroll
  for (int s = 0; s < S; ++s) {
#pragma unroll
    for (int k = 0; k < K; ++k) ring[s][k] = load(s * K + k);
  }
  int c = 0;
  const int last_full_chunk = count - K;
  while (c <= last_full_chunk) {
#pragma unroll
    for (int s = 0; s < S; ++s) {
      if (c <= last_full_chunk) {
#pragma unroll
        for (int jj = 0; jj < K; ++jj) {
          const T tap = taps[first_tap + c + jj];
#pragma unroll
          for (int r = 0; r < R; ++r) {
            const int o = r + jj;
#pragma unroll
            for (int l = 0; l < N; ++l) {
              acc[r].v[l] = fma(ring[(s + o / K) % S][o % K].v[l], tap, acc[r].v[l]);
            }
          }
        }
#pragma unroll
        for (int k = 0; k < K; ++k) ring[s][k] = load(c + S * K + k);
        c += K;
      }
    }
  }
  if (c < count) {  // fewer than K taps left: the ring afresh from c, each tap guarded
#pragma unroll
    for (int s = 0; s < S; ++s) {
#pragma unroll
      for (int k = 0; k < K; ++k) ring[s][k] = load(c + s * K + k);
    }
#pragma unroll
    for (int jj = 0; jj < K - 1; ++jj) {
      if (c + jj < count) {
        const T tap = taps[first_tap + c + jj];
#pragma unroll
        for (int r = 0; r < R; ++r) {
          const int o = r + jj;
#pragma unroll
          for (int l = 0; l < N; ++l) acc[r].v[l] = fma(ring[o / K][o % K].v[l], tap, acc[r].v[l]);
        }
      }
    }
  }
}

// The row and column taps as two readers: of two tables, or two views of one table that holds each
// image's (or the shared) row taps followed by its column taps. The kernels read taps through
// RowTaps and ColumnTaps; a by-value table is one parameter that both read.
template <class Reader>
struct RowAndColumnTaps {
  Reader row, column;
};
template <class Joined>
__device__ __forceinline__ const Joined& RowTaps(const Joined& joined) {
  return joined;
}
template <class Joined>
__device__ __forceinline__ const Joined& ColumnTaps(const Joined& joined) {
  return joined;
}
template <class Reader>
__device__ __forceinline__ const Reader& RowTaps(const RowAndColumnTaps<Reader>& taps) {
  return taps.row;
}
template <class Reader>
__device__ __forceinline__ const Reader& ColumnTaps(const RowAndColumnTaps<Reader>& taps) {
  return taps.column;
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
__host__ __device__ inline WorkItem DecodeWork(std::int64_t work, const Geometry& g) {
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
__host__ __device__ constexpr int CoveredElements(int interleaved) {
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
  __host__ __device__ SharedLayout(int interleaved, int kw, int kh) {
    using Staged = StagedType<In, T>;
    const int covered = CoveredElements<Tile>(interleaved);
    staged_width = covered + (kw - 1) * interleaved;
    // What the row pass's ring loads past the taps (and, for narrow elements, the up to E - 1 a
    // staged row starts before its first element, for whole 4-byte words of E), then an odd
    // number of 4-byte words: the 32 rows' lanes of the row pass read 32 banks.
    const int reach = covered + (kw + RingSegments<Tile::kRowOutputs>() * kChunk) * interleaved;
    constexpr int E = kWordElements<Staged>;
    staged_pitch = sizeof(Staged) < 4 ? ((reach + 2 * (E - 1)) / E | 1) * E : reach | 1;
    map_entries = (staged_width + 3) / 4 * 4;
    ring_bytes = static_cast<std::size_t>(Tile::kRows + kh - 1) * Tile::kTmpPitch * sizeof(T);
    staged_bytes =
        (static_cast<std::size_t>(Tile::kRows) * staged_pitch * sizeof(Staged) + 15) / 16 * 16;
    map_bytes = static_cast<std::size_t>(map_entries) * sizeof(int);
  }
  __host__ __device__ std::size_t Bytes() const { return ring_bytes + staged_bytes + map_bytes; }
};

template <class In, class T, class Taps, class Tile>
__global__ void __launch_bounds__(Tile::kThreads, Tile::kThreads == 256 ? kMinLargeBlocks<T> : 1)
    SeparableKernel(const In* __restrict__ x, In* __restrict__ y, const Geometry g,
                    const __grid_constant__ Taps taps) {
  constexpr int RH = Tile::kRowOutputs, RV = Tile::kColumnOutputs, NV = Tile::kColumnLanes;
  using Staged = StagedType<In, T>;
  unsigned char* const shared_bytes = DynamicSharedMemory();
  const SharedLayout<Tile, In, T> layout(g.interleaved, g.kw, g.kh);
  T* const ring = reinterpret_cast<T*>(shared_bytes);
  Staged* const staged = reinterpret_cast<Staged*>(shared_bytes + layout.ring_bytes);
  int* const map = reinterpret_cast<int*>(shared_bytes + layout.ring_bytes + layout.staged_bytes);
  const int ring_rows = Tile::kRows + g.kh - 1;
  const int thread = threadIdx.x, lane = thread % 32, warp = thread / 32;
  const int covered = CoveredElements<Tile>(g.interleaved);
  const int tasks_per_row = covered / RH;  // row pass segments of a row

  for (std::int64_t work = blockIdx.x; work < g.work; work += gridDim.x) {
    const WorkItem item = DecodeWork(work, g);
    const In* const x_plane = x + item.plane_offset;
    In* const y_plane = y + item.plane_offset;
    const int row_taps = item.row_taps, col_taps = item.column_taps;
    const int e0 = item.tile_column * Tile::kWidth;  // the tile's first element
    const int y_first = item.segment * g.segment_rows;
    const int outputs = min(g.segment_rows, g.height - y_first);
    const int tmp_total = outputs + g.kh - 1;
    const int v0 = y_first - g.ch;  // the virtual row of tmp row 0

    __syncthreads();  // the previous work's passes are done with shared memory
    // Staged element s is element e0 - cw * interleaved + s of the row: its offset in the row, or
    // -1 for a zero.
    for (int s = thread; s < layout.map_entries; s += Tile::kThreads) {
      int offset = -1;
      if (s < layout.staged_width) {
        const int e = e0 - g.cw * g.interleaved + s;
        const int pixel = e >= 0 ? e / g.interleaved : -((-e + g.interleaved - 1) / g.interleaved);
        const int channel = e - pixel * g.interleaved;
        const int source = SeparableFold(pixel, g.width, g.border);
        if (source >= 0) offset = (source * g.interleaved + channel) * g.element_stride;
      }
      map[s] = offset;
    }
    __syncthreads();

    // The row element of staged element 0, and for narrow elements the whole 4-byte word (of E)
    // it starts in: staged element s is at staged[shift + s] of its row.
    constexpr int E = kWordElements<Staged>;
    const int first_element = e0 - g.cw * g.interleaved;
    const int word_base = first_element & ~(E - 1);
    const int shift = std::is_same<Staged, T>::value ? 0 : first_element - word_base;
    const int staged_words = (shift + layout.staged_width + E - 1) / E;
    // Whether the tile's staged elements are consecutive elements of the row, none a border's.
    const bool contiguous = g.element_stride == 1 && first_element >= 0 &&
                            first_element + layout.staged_width <= g.row_elements;

    // Stages tmp rows [first, first + count): a warp a row, its lanes along the row.
    auto stage = [&](int first, int count) {
      for (int r = warp; r < count; r += Tile::kWarps) {
        const int source = SeparableFold(v0 + first + r, g.height, g.border);
        if (source < 0) continue;  // a zero row of tmp: the row pass writes it
        const In* const row = x_plane + source * g.row_stride;
        Staged* const to = staged + r * layout.staged_pitch;
        if constexpr (std::is_same<In, T>::value) {
          if (contiguous) {  // no border in the tile: the staged elements as they lie in the row
            const In* from = row + first_element + lane;
            unsigned at = static_cast<unsigned>(__cvta_generic_to_shared(to + lane));
            constexpr unsigned kStep = 32 * sizeof(In);
            int s = lane;
            for (; s + 96 < layout.staged_width; s += 128, from += 128, at += 4 * kStep) {
#pragma unroll
              for (int u = 0; u < 4; ++u) CopyAsync(at + u * kStep, from + u * 32, true);
            }
            for (; s < layout.staged_width; s += 32, from += 32, at += kStep) {
              CopyAsync(at, from, true);
            }
            continue;
          }
          for (int s = lane; s < layout.staged_width; s += 32) {
            const int offset = map[s];
            CopyAsync(to + s, offset >= 0 ? row + offset : row, offset >= 0);
          }
        } else {
          // Narrow elements: a 4-byte asynchronous copy where a word of the row lies whole in it
          // and rows are aligned (their words past the row's ends are filled once the copies land:
          // fill_folds), else element by element through the column map (misaligned rows).
          for (int w = lane; w < staged_words; w += 32) {
            const int a = word_base + E * w;  // the row element of the word's first element
            Staged* const word = to + E * w;
            if (g.vector_input) {
              if (a >= 0 && a + E <= g.row_elements) {
                CopyAsync(reinterpret_cast<unsigned*>(word),
                          reinterpret_cast<const unsigned*>(row + a), true);
              }
              continue;
            }
#pragma unroll
            for (int k = 0; k < E; ++k) {
              const int s = a + k - first_element;
              if (s < 0 || s >= layout.staged_width) continue;
              const int offset = map[s];
              word[k] = offset >= 0 ? row[offset] : Staged{};
            }
          }
        }
      }
      CopyAsyncCommit();
    };

    // Aligned narrow rows, once a warp's copies of its rows have landed: the elements past the
    // row's ends that an output reads, from the staged row where their fold lies in it (else from
    // global memory), or zeros. Elements further out only reach outputs past the row's end.
    const int left_folds = max(0, min(layout.staged_width, -first_element));
    const int right_first = max(0, g.row_elements - first_element);
    const int right_end = min(layout.staged_width,
                              g.row_elements + (g.kw - 1 - g.cw) * g.interleaved - first_element);
    const int folds = left_folds + max(0, right_end - right_first);
    auto fill_folds = [&](int first, int count) {
      if constexpr (!std::is_same<In, T>::value) {
        if (!g.vector_input || folds == 0) return;
        __syncwarp();  // the other lanes' copies are visible to this lane
        for (int r = warp; r < count; r += Tile::kWarps) {
          const int source = SeparableFold(v0 + first + r, g.height, g.border);
          if (source < 0) continue;
          Staged* const to = staged + r * layout.staged_pitch;
          for (int i = lane; i < folds; i += 32) {
            const int s = i < left_folds ? i : right_first + (i - left_folds);
            const int offset = map[s];
            const int at = offset - word_base;  // where the staged row holds it, if it does
            to[shift + s] = offset < 0 ? Staged{}
                            : at >= 0 && at < E * staged_words
                                ? to[at]
                                : x_plane[source * g.row_stride + offset];
          }
        }
      }
    };

    stage(0, min(Tile::kRows, tmp_total));
    int computed = 0, emitted = 0;
    while (emitted < outputs) {
      const int fresh = min(Tile::kRows, tmp_total - computed);
      CopyAsyncWaitAll();
      fill_folds(computed, fresh);
      __syncthreads();  // the staged rows are visible; the column pass is done with the ring
      // Row pass: lane r % kRows takes row r of the step; the slots take the row's segments.
      {
        const int r = thread % Tile::kRows;
        const int t = computed + r;  // its tmp row
        const bool zero_row = SeparableFold(v0 + t, g.height, g.border) < 0;
        T* const tmp_row = ring + (t % ring_rows) * Tile::kTmpPitch;
        const Staged* const staged_row = staged + r * layout.staged_pitch + shift;
        for (int task = thread / Tile::kRows; task < tasks_per_row; task += Tile::kRowSlots) {
          if (r >= fresh) break;
          // Outputs first + k * interleaved, k < RH: a group of interleaved * RH elements.
          const int group = task / g.interleaved;
          const int first = group * g.interleaved * RH + (task - group * g.interleaved);
          Lanes<T, 1> acc[RH];
#pragma unroll
          for (int k = 0; k < RH; ++k) acc[k].v[0] = T(0);
          if (!zero_row) {
            const Staged* const samples = staged_row + first;
            const int step = g.interleaved;
            Slide<RH>(acc, RowTaps(taps), row_taps, g.kw,
                      [&](int n) { return Lanes<T, 1>{{ToCompute<T>(samples[n * step])}}; });
          }
          if (g.interleaved == 1) {
#pragma unroll
            for (int k = 0; k < RH; k += 4) {
              using V = Lanes<T, 4>;
              *reinterpret_cast<V*>(tmp_row + first + k) =
                  V{{acc[k].v[0], acc[k + 1].v[0], acc[k + 2].v[0], acc[k + 3].v[0]}};
            }
          } else {
#pragma unroll
            for (int k = 0; k < RH; ++k) {
              const int e = first + k * g.interleaved;
              if (e < Tile::kWidth) tmp_row[e] = acc[k].v[0];
            }
          }
        }
      }
      computed += fresh;
      __syncthreads();  // the new rows of tmp are visible; the staged rows are free
      if (computed < tmp_total) stage(computed, min(Tile::kRows, tmp_total - computed));

      // Column pass: output rows [emitted, emitted + ready), as far as the rows of tmp reach.
      const int ready = min(computed - (g.kh - 1), outputs) - emitted;
      if (ready > 0) {
        const int column = thread % (Tile::kWidth / NV) * NV;
        const int first_row = thread / (Tile::kWidth / NV) * RV;  // of this batch
        if (first_row < ready) {
          Lanes<T, NV> acc[RV];
#pragma unroll
          for (int k = 0; k < RV; ++k) {
#pragma unroll
            for (int l = 0; l < NV; ++l) acc[k].v[l] = T(0);
          }
          // Ring row base + n, for the n < kh + RingSegments * kChunk that Slide reads: at most
          // one turn of the ring past row base.
          const int base = (emitted + first_row) % ring_rows;
          const T* const from_base = ring + base * Tile::kTmpPitch + column;
          const T* const wrapped = from_base - ring_rows * Tile::kTmpPitch;
          const int wrap = ring_rows - base;
          Slide<RV>(acc, ColumnTaps(taps), col_taps, g.kh, [&](int n) {
            return *reinterpret_cast<const Lanes<T, NV>*>((n < wrap ? from_base : wrapped) +
                                                          n * Tile::kTmpPitch);
          });
          const int e = e0 + column;
#pragma unroll
          for (int k = 0; k < RV; ++k) {
            if (first_row + k >= ready) break;
            In* const out = y_plane + static_cast<std::int64_t>(y_first + emitted + first_row + k) *
                                          g.row_stride;
            if (g.vector_output && e + NV <= g.row_elements) {
              Lanes<In, NV> v;
#pragma unroll
              for (int l = 0; l < NV; ++l) v.v[l] = FromCompute<In>(acc[k].v[l]);
              if constexpr (sizeof(In) * NV == 32) {  // double: two 16-byte stores
                auto* to = reinterpret_cast<Lanes<In, 2>*>(out + e);
                to[0] = Lanes<In, 2>{{v.v[0], v.v[1]}};
                to[1] = Lanes<In, 2>{{v.v[2], v.v[3]}};
              } else {
                *reinterpret_cast<Lanes<In, NV>*>(out + e) = v;
              }
            } else {
#pragma unroll
              for (int l = 0; l < NV; ++l) {
                if (e + l < g.row_elements) {
                  out[static_cast<std::int64_t>(e + l) * g.element_stride] =
                      FromCompute<In>(acc[k].v[l]);
                }
              }
            }
          }
        }
        emitted += ready;
      }
    }
  }
}

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

// ---- Filters no tile fits: two passes ----
//
// The row pass writes tmp (the compute type, one value a pixel) for every row of a batch of planes
// into a scratch buffer in global memory; the column pass filters tmp along H into y. A warp of the
// row pass owns a segment of kRowSegment outputs of one row, kRowPassOutputs consecutive ones a
// lane, and walks the row taps in chunks of kRowChunkTaps: each chunk stages the segment's folded
// samples at its offset into the warp's shared memory, and the outputs stay in registers across
// the chunks. A lane of the column pass owns kColumnPassOutputs consecutive rows of one column
// (a warp: 32 columns, its loads coalesced) and reads tmp through L1, each row folded by the
// border as it is read. Both apply every tap with Slide: one FMA per tap in tap order from +0,
// the row pass's sums rounded to the compute type, as the CPU does.

// Threads a block of either pass; warps are independent.
constexpr int kTwoPassThreads = 128;
// An odd number: the lanes' shared-memory loads, kRowPassOutputs elements apart, hit distinct
// banks.
constexpr int kRowPassOutputs = 9;
constexpr int kRowSegment = 32 * kRowPassOutputs;
constexpr int kRowChunkTaps = 512;
// What a warp stages for a chunk: its segment, the chunk's halo and what Slide's ring reads past.
constexpr int kRowStaged = kRowSegment + kRowChunkTaps + RingSegments<kRowPassOutputs>() * kChunk;
constexpr int kColumnPassOutputs = 16;
// The scratch of one batch of planes: at most this much, or one plane.
constexpr std::size_t kMostScratchBytes = std::size_t{256} << 20;

template <class T>
constexpr std::size_t RowPassSharedBytes() {
  return static_cast<std::size_t>(kTwoPassThreads / 32) * kRowStaged * sizeof(T);
}

// tmp of planes [first_plane, first_plane + planes) into `tmp`, plane after plane, rows of W.
template <class In, class T, class Taps>
__global__ void __launch_bounds__(kTwoPassThreads)
    SeparableRowPassKernel(const In* __restrict__ x, T* __restrict__ tmp, const Geometry g,
                           std::int64_t first_plane, std::int64_t planes,
                           const __grid_constant__ Taps taps) {
  constexpr int kWarps = kTwoPassThreads / 32;
  constexpr int R = kRowPassOutputs;
  __shared__ T staged_rows[kWarps][kRowStaged];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  T* const staged = staged_rows[warp];
  const int segments = (g.width + kRowSegment - 1) / kRowSegment;
  const std::int64_t tasks = planes * g.height * segments;
  for (std::int64_t task = static_cast<std::int64_t>(blockIdx.x) * kWarps + warp; task < tasks;
       task += static_cast<std::int64_t>(gridDim.x) * kWarps) {
    const int segment = static_cast<int>(task % segments);
    const std::int64_t plane_row = task / segments;  // local plane * H + row
    const int row = static_cast<int>(plane_row % g.height);
    const std::int64_t local_plane = plane_row / g.height;
    const std::int64_t plane = first_plane + local_plane;
    const std::int64_t image = plane / g.planes_per_image;
    const In* const x_row = x + image * g.image_stride +
                            (plane - image * g.planes_per_image) * g.sub_stride +
                            static_cast<std::int64_t>(row) * g.row_stride;
    const int row_taps = static_cast<int>(image) * g.taps.row_stride;
    const int x0 = segment * kRowSegment;
    Lanes<T, 1> acc[R];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r].v[0] = T(0);
    for (int c0 = 0; c0 < g.kw; c0 += kRowChunkTaps) {
      const int count = min(kRowChunkTaps, g.kw - c0);
      __syncwarp();  // every lane is done with the previous chunk's samples
      // Staged sample e is virtual pixel x0 - cw + c0 + e, folded by the border.
      for (int e = lane; e < kRowStaged; e += 32) {
        const int source = SeparableFold(x0 - g.cw + c0 + e, g.width, g.border);
        staged[e] = source < 0
                        ? T(0)
                        : ToCompute<T>(x_row[static_cast<std::int64_t>(source) * g.element_stride]);
      }
      __syncwarp();
      const T* const samples = staged + lane * R;
      Slide<R>(acc, RowTaps(taps), row_taps + c0, count,
               [&](int n) { return Lanes<T, 1>{{samples[n]}}; });
    }
    T* const tmp_row = tmp + plane_row * g.width;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int xx = x0 + lane * R + r;
      if (xx < g.width) tmp_row[xx] = acc[r].v[0];
    }
  }
}

// y of planes [first_plane, first_plane + planes) from their tmp.
template <class In, class T, class Taps>
__global__ void __launch_bounds__(kTwoPassThreads)
    SeparableColumnPassKernel(const T* __restrict__ tmp, In* __restrict__ y, const Geometry g,
                              std::int64_t first_plane, std::int64_t planes,
                              const __grid_constant__ Taps taps) {
  constexpr int kWarps = kTwoPassThreads / 32;
  constexpr int R = kColumnPassOutputs;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int column_tiles = (g.width + 31) / 32;
  const int row_groups = (g.height + R - 1) / R;
  const std::int64_t tasks = planes * row_groups * column_tiles;
  for (std::int64_t task = static_cast<std::int64_t>(blockIdx.x) * kWarps + warp; task < tasks;
       task += static_cast<std::int64_t>(gridDim.x) * kWarps) {
    const int tile = static_cast<int>(task % column_tiles);
    const std::int64_t rest = task / column_tiles;
    const int y0 = static_cast<int>(rest % row_groups) * R;
    const std::int64_t local_plane = rest / row_groups;
    const std::int64_t plane = first_plane + local_plane;
    const std::int64_t image = plane / g.planes_per_image;
    const int col_taps = static_cast<int>(image) * g.taps.column_stride + g.taps.column_first;
    const int xx = tile * 32 + lane;
    // Lanes past the row's end read its last column and store nothing.
    const T* const tmp_column = tmp + local_plane * g.height * g.width + min(xx, g.width - 1);
    Lanes<T, 1> acc[R];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r].v[0] = T(0);
    Slide<R>(acc, ColumnTaps(taps), col_taps, g.kh, [&](int n) {
      const int source = SeparableFold(y0 - g.ch + n, g.height, g.border);
      return Lanes<T, 1>{
          {source < 0 ? T(0) : __ldg(tmp_column + static_cast<std::int64_t>(source) * g.width)}};
    });
    if (xx >= g.width) continue;
    In* const y_column = y + image * g.image_stride +
                         (plane - image * g.planes_per_image) * g.sub_stride +
                         static_cast<std::int64_t>(xx) * g.element_stride;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int yy = y0 + r;
      if (yy < g.height) {
        y_column[static_cast<std::int64_t>(yy) * g.row_stride] = FromCompute<In>(acc[r].v[0]);
      }
    }
  }
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

// Byte `i` (0 to 3, a constant) of `word` as a float, exactly: on the GPU a byte permute puts it
// under the exponent of 2^23 and a subtraction takes 2^23 away, two full-rate instructions where
// an extraction and an integer conversion take more (and the conversion runs at a quarter rate).
__host__ __device__ __forceinline__ float ByteAsFloat(unsigned word, int i) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(__byte_perm(word, 0x4B000000u, 0x7440u | static_cast<unsigned>(i))) -
         8388608.0f;
#else
  return static_cast<float>((word >> (8 * i)) & 0xFFu);
#endif
}

// ---- Short square filters: rows in registers ----
//
// A filter of kK x kK taps (3, 5, 7 or kRegisterMaxTaps = 9) on rows of whole vectors, aligned, of
// one channel or of kC = 3 interleaved ones (RegisterChannels), needs no shared tile: a warp owns a
// strip of RegisterSpan elements of one plane (or interleaved image) over a segment of rows, its
// lanes taking consecutive vectors of kRegisterVector elements (16 bytes of float32, 8 of uint8, 8
// of float16 or bfloat16: a lane computes 4 floats, as float32's, or 8, as uint8's).
// Lanes RegisterHaloLanes to 31 - RegisterHaloLanes compute outputs; the lanes at either end only
// hold the halo. Each lane takes the kK / 2 pixels on either side of its vector from the lanes
// beside it (__shfl_sync) and computes its elements of a row of tmp; the last kK rows of tmp stay
// in registers (a ring whose slots are constants over a turn of kK rows), and each row from the
// kK-th on gives an output row, stored as one vector. The input rows come through a ring of
// kRegisterStages rows in shared memory, each lane copying its own vector asynchronously
// (cp.async) that many rows ahead of the row it computes: the loads stay in flight without
// registers, and a lane waits only for its own copies (no barrier). The same FMAs in the same
// order as the fused kernel and the CPU: bit for bit.
constexpr int kRegisterThreads = 128;
constexpr int kRegisterMaxTaps = 9;
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
__host__ __device__ constexpr int RegisterHaloLanes(int k, int channels) {
  return ((k / 2) * channels + kRegisterVector<In> - 1) / kRegisterVector<In>;
}
template <class In>
__host__ __device__ constexpr int RegisterSpan(int k, int channels) {
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

// A row of a warp's strip in shared memory: each lane's vector, and for bytes the second half of
// the 16 bytes at a row's end that a lane outside the row picks its elements from. A lane of
// 16-bit elements outside the row holds instead, for each of its elements, the 4-byte word of the
// row its fold lies in (cp.async copies no 2-byte unit), in the place of its vector.
template <class In, bool kSixteenBit = sizeof(In) == 2>
struct RegisterStage {
  Lanes<In, kRegisterVector<In>> vector[32];
  Lanes<In, kRegisterVector<In>> window[sizeof(In) == 1 ? 32 : 1];
};
template <class In>
struct RegisterStage<In, true> {
  union Slot {
    Lanes<In, kRegisterVector<In>> vector;
    std::uint32_t words[kRegisterVector<In>];
  } lane[32];
};

template <class In, class T, class Taps, int kK, int kC>
__global__ void __launch_bounds__(kRegisterThreads, RegisterMinBlocks<In>(kK, kC))
    SeparableRegisterKernel(const In* __restrict__ x, In* __restrict__ y, const Geometry g,
                            const __grid_constant__ Taps taps) {
  constexpr int V = kRegisterVector<In>, kStages = kRegisterStages<In>;
  constexpr int kReach = kK / 2, kHalo = kReach * kC, H = RegisterHaloLanes<In>(kK, kC);
  constexpr int kSpan = RegisterSpan<In>(kK, kC);
  constexpr bool kBytes = sizeof(In) == 1, kSixteenBit = sizeof(In) == 2;
  static_assert(kK % 2 == 1 && H < 16, "a warp's lanes hold the halo");
  // A byte lane outside the row picks its elements from the 16 bytes at the row's end: those the
  // outputs read fold to within kReach + 1 pixels of it.
  static_assert(!kBytes || (kReach + 1) * kC <= 2 * V, "folded elements within 16 bytes");
  using Vector = Lanes<In, V>;
  const int lane = threadIdx.x % 32;
  constexpr int kWarps = kRegisterThreads / 32;
  __shared__ RegisterStage<In> stages[kWarps][kStages];
  RegisterStage<In>(&ring_in)[kStages] = stages[threadIdx.x / 32];
  // A vector outside the row (the halo lanes at its ends) takes its V elements where the border
  // folds them, worked out once a strip: for 2- and 4-byte elements their offsets in the row (-1: a
  // zero), copied one by one (16-bit ones as the words that hold them); for bytes their places in
  // the 16 bytes at the row's end on their side (-1: a zero), copied as two vectors (the elements a
  // computed output reads lie in them).
  __shared__ int folded[kWarps][32][V];
  int (&fold)[V] = folded[threadIdx.x / 32][lane];
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * kWarps;
  for (std::int64_t work = static_cast<std::int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
       work < g.work; work += warps) {
    const WorkItem item = DecodeWork(work, g);
    const In* const x_plane = x + item.plane_offset;
    In* const y_plane = y + item.plane_offset;
    T row_taps[kK], column_taps[kK];
#pragma unroll
    for (int j = 0; j < kK; ++j) {
      row_taps[j] = RowTaps(taps)[item.row_taps + j];
      column_taps[j] = ColumnTaps(taps)[item.column_taps + j];
    }
    const int e = item.tile_column * kSpan + (lane - H) * V;  // the lane's first element
    const bool whole = e >= 0 && e + V <= g.row_elements;
    const bool emits = lane >= H && lane < 32 - H && e < g.row_elements;
    // Bytes: the 16 bytes at the row's end on the lane's side (the row's first ones if shorter).
    const int window = e < 0 ? 0 : max(0, g.row_elements - 2 * V);
    if (!whole) {
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const int element = e + i;
        const int pixel = element >= 0 ? element / kC : -((kC - 1 - element) / kC);
        const int column = SeparableFold(pixel, g.width, g.border);
        const int offset = column < 0 ? -1 : column * kC + (element - pixel * kC);
        fold[i] = !kBytes || offset < 0 ? offset : min(max(offset - window, 0), 2 * V - 1);
      }
    }
    const int y_first = item.segment * g.segment_rows;
    const int outputs = min(g.segment_rows, g.height - y_first);
    const int rows = outputs + kK - 1;  // rows of tmp the segment walks
    const int v0 = y_first - kReach;    // the virtual row of tmp row 0
    // Copies row t's vector to its stage, as a group of its own; rows past the segment and rows
    // the border makes zeros are zeros.
    auto copy = [&](int t) {
      const int source = SeparableFold(v0 + t, g.height, g.border);
      const bool inside = t < rows && source >= 0;
      const In* const row = x_plane + static_cast<std::int64_t>(inside ? source : 0) * g.row_stride;
      RegisterStage<In>& stage = ring_in[t % kStages];
      if constexpr (kSixteenBit) {
        if (whole) {
          CopyAsync(&stage.lane[lane].vector, reinterpret_cast<const Vector*>(row + e), inside);
        } else {
          // An element's word starts at its even offset, or an element before an odd one: rows
          // start on 8-byte boundaries and hold whole vectors.
#pragma unroll
          for (int i = 0; i < V; ++i) {
            CopyAsync(&stage.lane[lane].words[i],
                      reinterpret_cast<const std::uint32_t*>(row + (max(fold[i], 0) & ~1)),
                      inside && fold[i] >= 0);
          }
        }
      } else if (whole) {
        CopyAsync(&stage.vector[lane], reinterpret_cast<const Vector*>(row + e), inside);
      } else if constexpr (kBytes) {
        const auto* const from = reinterpret_cast<const Vector*>(row + window);
        CopyAsync(&stage.vector[lane], from, inside && window + V <= g.row_elements);
        CopyAsync(&stage.window[lane], from + 1, inside && window + 2 * V <= g.row_elements);
      } else {
#pragma unroll
        for (int i = 0; i < V; ++i) {
          CopyAsync(&stage.vector[lane].v[i], row + max(fold[i], 0), inside && fold[i] >= 0);
        }
      }
      CopyAsyncCommit();
    };
#pragma unroll
    for (int t = 0; t < kStages; ++t) copy(t);
    T ring[kK][V];
    for (int turn = 0; turn < rows; turn += kK) {
#pragma unroll
      for (int slot = 0; slot < kK; ++slot) {
        const int t = turn + slot;
        if (t >= rows) break;
        CopyAsyncWaitPrior<kStages - 1>();  // row t's copies have landed
        const RegisterStage<In>& stage = ring_in[t % kStages];
        // Elements -kHalo .. V + kHalo - 1 of the lane's vector, the outer ones other lanes'.
        T sample[V + 2 * kHalo];
        if constexpr (kSixteenBit) {
          if (whole) {
            const Vector current = stage.lane[lane].vector;
#pragma unroll
            for (int i = 0; i < V; ++i) sample[kHalo + i] = ToCompute<T>(current.v[i]);
          } else {  // each element the half of its word its offset's parity says (zeros: +0)
#pragma unroll
            for (int i = 0; i < V; ++i) {
              const std::uint32_t word = stage.lane[lane].words[i];
              const In element{static_cast<std::uint16_t>(fold[i] & 1 ? word >> 16 : word)};
              sample[kHalo + i] = ToCompute<T>(element);
            }
          }
        } else if constexpr (kBytes) {
          static_assert(sizeof(Vector) == 8, "a vector of 8 bytes");
          std::uint64_t bytes;
          std::memcpy(&bytes, &stage.vector[lane], 8);
          if (!whole) {  // the elements from the 16 bytes at the row's end
            std::uint64_t second, picked = 0;
            std::memcpy(&second, &stage.window[lane], 8);
#pragma unroll
            for (int i = 0; i < V; ++i) {
              const int at = fold[i];
              const std::uint64_t byte = ((at < V ? bytes : second) >> (8 * (at & (V - 1)))) & 0xFF;
              picked |= at < 0 ? 0 : byte << (8 * i);
            }
            bytes = picked;
          }
#pragma unroll
          for (int i = 0; i < V; ++i) {
            sample[kHalo + i] = ByteAsFloat(static_cast<unsigned>(bytes >> (32 * (i / 4))), i % 4);
          }
        } else {
          const Vector current = stage.vector[lane];
#pragma unroll
          for (int i = 0; i < V; ++i) sample[kHalo + i] = current.v[i];
        }
#pragma unroll
        for (int q = -kHalo; q < V + kHalo; ++q) {
          if (q >= 0 && q < V) continue;
          const int from = q >= 0 ? q / V : -((V - 1 - q) / V);  // lanes away, rounded down
          sample[kHalo + q] =
              __shfl_sync(0xffffffffu, sample[kHalo + q - from * V], (lane + from + 32) % 32);
        }
        const bool zero_row = SeparableFold(v0 + t, g.height, g.border) < 0;
#pragma unroll
        for (int i = 0; i < V; ++i) {
          T acc = T(0);
          if (!zero_row) {
#pragma unroll
            for (int j = 0; j < kK; ++j)
              acc = fma(sample[kHalo + i + (j - kReach) * kC], row_taps[j], acc);
          }
          ring[slot][i] = acc;
        }
        // The stage is free once its values are used (the FMAs above): row t + kStages's copies.
        copy(t + kStages);
        if (t < kK - 1 || !emits) continue;
        // Output row t - (kK - 1): rows of tmp t - kK + 1 .. t, in slots slot + 1 .. slot (mod kK).
        Vector out;
#pragma unroll
        for (int i = 0; i < V; ++i) {
          T acc = T(0);
#pragma unroll
          for (int k = 0; k < kK; ++k) acc = fma(ring[(slot + 1 + k) % kK][i], column_taps[k], acc);
          out.v[i] = FromCompute<In>(acc);
        }
        In* const to = y_plane + static_cast<std::int64_t>(y_first + t - (kK - 1)) * g.row_stride;
        if (whole) {
          *reinterpret_cast<Vector*>(to + e) = out;
        } else {
#pragma unroll
          for (int i = 0; i < V; ++i) {
            if (e + i >= 0 && e + i < g.row_elements) to[e + i] = out.v[i];
          }
        }
      }
    }
    CopyAsyncWaitAll();  // the copies past the segment's rows land before the stages are reused
  }
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

// f(std::integral_constant<int, k>(), std::integral_constant<int, c>()) for the register kernel's
// k (3, 5, 7 or 9) and interleaved channels c (1 or 3).
template <class F>
void WithRegisterKernel(int k, int channels, F&& f) {
  auto with_k = [&](auto c) {
    if (k == 3) return f(std::integral_constant<int, 3>(), c);
    if (k == 7) return f(std::integral_constant<int, 7>(), c);
    if (k == 9) return f(std::integral_constant<int, 9>(), c);
    return f(std::integral_constant<int, 5>(), c);
  };
  if (channels == 3) return with_k(std::integral_constant<int, 3>());
  return with_k(std::integral_constant<int, 1>());
}

}  // namespace separable_kernels
}  // namespace ops
}  // namespace constmem
