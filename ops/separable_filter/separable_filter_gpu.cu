// SPDX-License-Identifier: Apache-2.0
// SeparableFilter's CUDA kernel and launcher: one fused pass. No framework header reaches nvcc.
//
// A block owns a strip of kWidth consecutive elements of a row (a tile column) of one plane, over
// a segment of rows (usually the whole height), and walks down it kRows rows a step:
//   1. the input rows of the step, kWidth elements plus the halo of kw - 1 pixels, are staged in
//      shared memory (asynchronous copies, zeros or folded columns through a column map the block
//      computes once per strip; uint8 four pixels at a time, converted to float);
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
// Filters whose tiles do not fit shared memory (from about 300 taps float32 on an H200; past
// kSeparableSmallTileMaxTaps only the large tile is tried) run in two passes through an
// intermediate in global memory (LaunchTwoPass below), with the same FMAs in the same order.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "constmem/async_copy.cuh"
#include "constmem/constmem.cuh"
#include "constmem/dispatch.cuh"
#include "constmem/stream_buffer.cuh"
#include "separable_filter/separable_filter_functor.h"
#include "separable_filter/separable_filter_launcher.h"

// Four slots of 1,024 taps per dtype (a shared table of two 127-tap filters fits one; a per-image
// table takes a run of slots, up to all four): 16 KiB + 32 KiB of the module's 64 KiB (64 KiB
// would not hold a fifth slot of both types). A larger table is read from global memory: a
// per-image table is read warp-uniformly like a shared one (a block works on one image).
CONSTMEM_DEFINE_FLOAT_BANKS(separable_taps, 1024, 4);

namespace constmem {
namespace ops {
namespace {

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
TapLayout JoinedTaps(const SeparableShape& s) {
  const int stride = s.per_image_taps ? static_cast<int>(s.kw + s.kh) : 0;
  return {stride, stride, static_cast<int>(s.kw)};
}
// Two tables, one of row taps and one of column taps.
TapLayout SeparateTaps(const SeparableShape& s) {
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
  // Shared memory (elements of T): the staged rows' pitch and filled width, the column map's size.
  int staged_pitch, staged_width, map_entries;
  bool vector_input;   // uint8 rows start on 4-byte boundaries: four pixels a load
  bool vector_output;  // rows start on 4-element boundaries and element_stride is 1
};

// Elements a tile's row pass covers: kWidth, or whole groups of interleaved * kRowOutputs.
template <class Tile>
__host__ __device__ constexpr int CoveredElements(int interleaved) {
  const int group = interleaved * Tile::kRowOutputs;
  return interleaved == 1 ? Tile::kWidth : (Tile::kWidth + group - 1) / group * group;
}

template <class Tile, class T>
struct SharedLayout {
  int staged_width, staged_pitch, map_entries;
  std::size_t ring_bytes, staged_bytes, map_bytes;
  __host__ __device__ SharedLayout(int interleaved, int kw, int kh) {
    const int covered = CoveredElements<Tile>(interleaved);
    staged_width = covered + (kw - 1) * interleaved;
    // What the row pass's ring loads past the taps, then odd: 32 rows' lanes in 32 banks.
    staged_pitch = (covered + (kw + RingSegments<Tile::kRowOutputs>() * kChunk) * interleaved) | 1;
    map_entries = (staged_width + 3) / 4 * 4;
    ring_bytes = static_cast<std::size_t>(Tile::kRows + kh - 1) * Tile::kTmpPitch * sizeof(T);
    staged_bytes =
        (static_cast<std::size_t>(Tile::kRows) * staged_pitch * sizeof(T) + 15) / 16 * 16;
    map_bytes = static_cast<std::size_t>(map_entries) * sizeof(int);
  }
  __host__ __device__ std::size_t Bytes() const { return ring_bytes + staged_bytes + map_bytes; }
};

template <class In, class T, class Taps, class Tile>
__global__ void __launch_bounds__(Tile::kThreads, Tile::kThreads == 256 ? kMinLargeBlocks<T> : 1)
    SeparableKernel(const In* __restrict__ x, In* __restrict__ y, const Geometry g,
                    const __grid_constant__ Taps taps) {
  constexpr int RH = Tile::kRowOutputs, RV = Tile::kColumnOutputs, NV = Tile::kColumnLanes;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  const SharedLayout<Tile, T> layout(g.interleaved, g.kw, g.kh);
  T* const ring = reinterpret_cast<T*>(shared_bytes);
  T* const staged = reinterpret_cast<T*>(shared_bytes + layout.ring_bytes);
  int* const map = reinterpret_cast<int*>(shared_bytes + layout.ring_bytes + layout.staged_bytes);
  const int ring_rows = Tile::kRows + g.kh - 1;
  const int thread = threadIdx.x, lane = thread % 32, warp = thread / 32;
  const int covered = CoveredElements<Tile>(g.interleaved);
  const int tasks_per_row = covered / RH;  // row pass segments of a row

  for (std::int64_t work = blockIdx.x; work < g.work; work += gridDim.x) {
    const int tile_column = static_cast<int>(work % g.tile_columns);
    const std::int64_t rest = work / g.tile_columns;
    const int segment = static_cast<int>(rest % g.segments);
    const std::int64_t plane = rest / g.segments;
    const std::int64_t image = plane / g.planes_per_image;
    const std::int64_t plane_offset =
        image * g.image_stride + (plane - image * g.planes_per_image) * g.sub_stride;
    const In* const x_plane = x + plane_offset;
    In* const y_plane = y + plane_offset;
    const int row_taps = static_cast<int>(image) * g.taps.row_stride;
    const int col_taps = static_cast<int>(image) * g.taps.column_stride + g.taps.column_first;
    const int e0 = tile_column * Tile::kWidth;  // the tile's first element
    const int y_first = segment * g.segment_rows;
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

    // Stages tmp rows [first, first + count): a warp a row, its lanes along the row.
    auto stage = [&](int first, int count) {
      for (int r = warp; r < count; r += Tile::kWarps) {
        const int source = SeparableFold(v0 + first + r, g.height, g.border);
        if (source < 0) continue;  // a zero row of tmp: the row pass writes it
        const In* const row = x_plane + source * g.row_stride;
        T* const to = staged + r * layout.staged_pitch;
        if constexpr (std::is_same<In, T>::value) {
          for (int s = lane; s < layout.staged_width; s += 32) {
            const int offset = map[s];
            CopyAsync(to + s, offset >= 0 ? row + offset : row, offset >= 0);
          }
        } else {
          // uint8: four pixels a lane, one 4-byte load where they are contiguous and aligned.
          for (int s = lane * 4; s < layout.staged_width; s += 32 * 4) {
            const int4 offsets = *reinterpret_cast<const int4*>(map + s);
            const bool word = g.vector_input && offsets.x >= 0 && offsets.x % 4 == 0 &&
                              offsets.w == offsets.x + 3 && s + 3 < layout.staged_width;
            T values[4];
            if (word) {
              const unsigned bits = __ldg(reinterpret_cast<const unsigned*>(row + offsets.x));
#pragma unroll
              for (int k = 0; k < 4; ++k) values[k] = static_cast<T>((bits >> (8 * k)) & 0xffu);
            } else {
              const int o[4] = {offsets.x, offsets.y, offsets.z, offsets.w};
#pragma unroll
              for (int k = 0; k < 4; ++k) values[k] = o[k] >= 0 ? static_cast<T>(row[o[k]]) : T(0);
            }
#pragma unroll
            for (int k = 0; k < 4; ++k) {
              if (s + k < layout.staged_width) to[s + k] = values[k];
            }
          }
        }
      }
      CopyAsyncCommit();
    };

    stage(0, min(Tile::kRows, tmp_total));
    int computed = 0, emitted = 0;
    while (emitted < outputs) {
      const int fresh = min(Tile::kRows, tmp_total - computed);
      CopyAsyncWaitAll();
      __syncthreads();  // the staged rows are visible; the column pass is done with the ring
      // Row pass: lane r % kRows takes row r of the step; the slots take the row's segments.
      {
        const int r = thread % Tile::kRows;
        const int t = computed + r;  // its tmp row
        const bool zero_row = SeparableFold(v0 + t, g.height, g.border) < 0;
        T* const tmp_row = ring + (t % ring_rows) * Tile::kTmpPitch;
        const T* const staged_row = staged + r * layout.staged_pitch;
        for (int task = thread / Tile::kRows; task < tasks_per_row; task += Tile::kRowSlots) {
          if (r >= fresh) break;
          // Outputs first + k * interleaved, k < RH: a group of interleaved * RH elements.
          const int group = task / g.interleaved;
          const int first = group * g.interleaved * RH + (task - group * g.interleaved);
          Lanes<T, 1> acc[RH];
#pragma unroll
          for (int k = 0; k < RH; ++k) acc[k].v[0] = T(0);
          if (!zero_row) {
            const T* const samples = staged_row + first;
            const int step = g.interleaved;
            Slide<RH>(acc, RowTaps(taps), row_taps, g.kw,
                      [&](int n) { return Lanes<T, 1>{{samples[n * step]}}; });
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
          const int base = (emitted + first_row) % ring_rows;
          Slide<RV>(acc, ColumnTaps(taps), col_taps, g.kh, [&](int n) {
            int slot = base + n;
            slot -= slot >= ring_rows ? ring_rows : 0;
            slot -= slot >= ring_rows ? ring_rows : 0;
            return *reinterpret_cast<const Lanes<T, NV>*>(ring + slot * Tile::kTmpPitch + column);
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
              for (int l = 0; l < NV; ++l) v.v[l] = SeparableToOutput<In>(acc[k].v[l]);
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
                      SeparableToOutput<In>(acc[k].v[l]);
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

template <class T>
StrategyLimits SeparableLimits() {
  StrategyLimits limits;
  limits.constant_bank_bytes = separable_taps_banks::Of<T>::kBytes;
  return limits;
}

// The geometry of `shape` with `interleaved` channels in a row (1 or C), its taps laid out as
// `taps` says.
Geometry MakeGeometry(const SeparableShape& s, bool interleave, TapLayout taps) {
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
        staged[e] =
            source < 0
                ? T(0)
                : static_cast<T>(x_row[static_cast<std::int64_t>(source) * g.element_stride]);
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
        y_column[static_cast<std::int64_t>(yy) * g.row_stride] = SeparableToOutput<In>(acc[r].v[0]);
      }
    }
  }
}

template <class In, class T, class Taps>
Status LaunchTwoPass(int device, cudaStream_t stream, const In* x, In* y,
                     const SeparableShape& shape, const Taps& taps, TapLayout layout) {
  constexpr auto row_kernel = SeparableRowPassKernel<In, T, Taps>;
  constexpr auto column_kernel = SeparableColumnPassKernel<In, T, Taps>;
  const Geometry g = MakeGeometry(shape, /*interleave=*/false, layout);
  const std::size_t plane_bytes = static_cast<std::size_t>(g.height) * g.width * sizeof(T);
  const std::int64_t batch = std::max<std::int64_t>(
      1,
      std::min<std::int64_t>(g.planes, static_cast<std::int64_t>(kMostScratchBytes / plane_bytes)));
  int row_resident = 0, column_resident = 0;
  CONSTMEM_RETURN_IF_ERROR(ResidentBlocks<row_kernel>(kTwoPassThreads, device, &row_resident));
  CONSTMEM_RETURN_IF_ERROR(
      ResidentBlocks<column_kernel>(kTwoPassThreads, device, &column_resident));
  StreamOrderedBuffer scratch;
  CONSTMEM_RETURN_IF_ERROR(
      scratch.Allocate(stream, device, static_cast<std::size_t>(batch) * plane_bytes));
  T* const tmp = static_cast<T*>(scratch.data());
  constexpr int kWarps = kTwoPassThreads / 32;
  for (std::int64_t first = 0; first < g.planes; first += batch) {
    const std::int64_t planes = std::min(batch, g.planes - first);
    const std::int64_t row_tasks = planes * g.height * ((g.width + kRowSegment - 1) / kRowSegment);
    row_kernel<<<PersistentGrid((row_tasks + kWarps - 1) / kWarps, row_resident), kTwoPassThreads,
                 0, stream>>>(x, tmp, g, first, planes, taps);
    CONSTMEM_RETURN_IF_ERROR(CudaStatus(CONSTMEM_CUDA_CALL(kKernelLaunch, cudaGetLastError()),
                                        "SeparableFilter row pass launch"));
    const std::int64_t column_tasks =
        planes * ((g.height + kColumnPassOutputs - 1) / kColumnPassOutputs) * ((g.width + 31) / 32);
    column_kernel<<<PersistentGrid((column_tasks + kWarps - 1) / kWarps, column_resident),
                    kTwoPassThreads, 0, stream>>>(tmp, y, g, first, planes, taps);
    CONSTMEM_RETURN_IF_ERROR(CudaStatus(CONSTMEM_CUDA_CALL(kKernelLaunch, cudaGetLastError()),
                                        "SeparableFilter column pass launch"));
  }
  return scratch.Release();  // the free is enqueued after the kernels
}

template <class In, class T, class Taps, class Tile>
Status LaunchTile(int device, cudaStream_t stream, const In* x, In* y, Geometry g,
                  const Taps& taps) {
  constexpr auto kernel = SeparableKernel<In, T, Taps, Tile>;
  const SharedLayout<Tile, T> layout(g.interleaved, g.kw, g.kh);
  g.staged_pitch = layout.staged_pitch;
  g.staged_width = layout.staged_width;
  g.map_entries = layout.map_entries;
  // Filters longer than a few taps need more than the 48 KiB a block gets without asking: the
  // device's most, asked once a device.
  static std::array<std::atomic<bool>, kMaxDevices> shared_memory_raised{};
  if (!shared_memory_raised[device].load(std::memory_order_relaxed)) {
    std::size_t most = 0;
    CONSTMEM_RETURN_IF_ERROR(MaxSharedBytesPerBlock(device, &most));
    CONSTMEM_RETURN_IF_CUDA_ERROR(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(most)),
        "cudaFuncSetAttribute(SeparableFilter kernel)");
    shared_memory_raised[device].store(true, std::memory_order_relaxed);
  }
  const std::size_t shared = layout.Bytes();
  // The occupancy of the last shared-memory size a device launched with: calls with one filter
  // ask the runtime once.
  static std::array<std::atomic<std::uint64_t>, kMaxDevices> last_occupancy{};
  const std::uint64_t last = last_occupancy[device].load(std::memory_order_relaxed);
  int per_sm = static_cast<int>(last & 0xFF), sms = 0;
  if ((last >> 8) != shared) {
    CONSTMEM_RETURN_IF_CUDA_ERROR(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, Tile::kThreads, shared),
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor(SeparableFilter kernel)");
    last_occupancy[device].store((static_cast<std::uint64_t>(shared) << 8) |
                                     static_cast<std::uint64_t>(std::min(per_sm, 255)),
                                 std::memory_order_relaxed);
  }
  CONSTMEM_RETURN_IF_ERROR(MultiprocessorCount(device, &sms));
  const std::int64_t resident = std::max(1, per_sm) * static_cast<std::int64_t>(sms);
  // Segments of rows: whole heights where the strips fill the GPU twice over; else shorter ones,
  // but each at least four halos long (a segment computes kh - 1 rows of tmp beyond its outputs).
  g.tile_columns = (g.row_elements + Tile::kWidth - 1) / Tile::kWidth;
  const std::int64_t strips = g.planes * g.tile_columns;
  const std::int64_t shortest = std::max(Tile::kRows, 4 * (g.kh - 1));
  const std::int64_t most_segments = std::max<std::int64_t>(1, g.height / shortest);
  const std::int64_t segments =
      std::min<std::int64_t>(most_segments, (2 * resident + strips - 1) / strips);
  g.segment_rows = static_cast<int>((g.height + segments - 1) / segments);
  g.segments = (g.height + g.segment_rows - 1) / g.segment_rows;
  g.work = strips * g.segments;
  g.vector_input = reinterpret_cast<std::uintptr_t>(x) % 4 == 0 && g.row_stride % 4 == 0;
  g.vector_output = g.element_stride == 1 && g.row_stride % 4 == 0 &&
                    reinterpret_cast<std::uintptr_t>(y) % (4 * sizeof(In)) == 0;
  const dim3 grid = PersistentGrid(
      g.work, static_cast<int>(std::min<std::int64_t>(resident, std::numeric_limits<int>::max())));
  kernel<<<grid, Tile::kThreads, shared, stream>>>(x, y, g, taps);
  return CudaStatus(CONSTMEM_CUDA_CALL(kKernelLaunch, cudaGetLastError()),
                    "SeparableFilter launch");
}

// The tile and the rows' form for `shape` where `shared_bytes_per_block` holds them: large tiles,
// else small; interleaved channels where C <= kMaxInterleavedChannels and they fit, else one
// channel at a time. Filters longer than kSeparableSmallTileMaxTaps along either axis take only
// the large tile: on the H200 it beats the two passes wherever it fits (float32 [32, 3, 1080,
// 1920]: 5.14 against 7.76 ms at 129 taps, 10.07 against 12.69 ms at 255), the small one only up
// to about 191 taps. 0: nothing fits.
template <class T>
int ChooseTile(const SeparableShape& s, std::size_t shared_bytes_per_block, bool* interleave) {
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
                                    ? SharedLayout<LargeTile, T>(interleaved, kw, kh).Bytes()
                                    : SharedLayout<SmallTile, T>(interleaved, kw, kh).Bytes();
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
bool Fused(const SeparableShape& s) {
  return s.kw <= CONSTMEM_SEPARABLE_FUSED_MAX_TAPS && s.kh <= CONSTMEM_SEPARABLE_FUSED_MAX_TAPS;
}

// The kernels for `shape` with its taps read through `taps`, laid out as `layout` says.
template <class In, class T, class Taps>
Status LaunchKernels(int device, cudaStream_t stream, const In* x, In* y,
                     const SeparableShape& shape, const Taps& taps, TapLayout layout,
                     std::size_t shared_bytes_per_block) {
  std::size_t device_bytes = 0;
  CONSTMEM_RETURN_IF_ERROR(MaxSharedBytesPerBlock(device, &device_bytes));
  const std::size_t available = std::min(device_bytes, shared_bytes_per_block);
  bool interleave = false;
  switch (Fused(shape) ? ChooseTile<T>(shape, available, &interleave) : 0) {
    case LargeTile::kThreads:
      return LaunchTile<In, T, Taps, LargeTile>(device, stream, x, y,
                                                MakeGeometry(shape, interleave, layout), taps);
    case SmallTile::kThreads:
      return LaunchTile<In, T, Taps, SmallTile>(device, stream, x, y,
                                                MakeGeometry(shape, interleave, layout), taps);
  }
  // Longer filters, or no tile fits: the two passes.
  if (RowPassSharedBytes<T>() > available) {
    return Status(StatusCode::kFailedPrecondition,
                  "SeparableFilter's GPU kernels need more shared memory a block than the " +
                      std::to_string(available) + " bytes this GPU offers");
  }
  return LaunchTwoPass<In, T>(device, stream, x, y, shape, taps, layout);
}

template <class In>
Status CheckSeparableData(const SeparableShape& shape, const In* x, In* y) {
  if (x == nullptr || y == nullptr) return InvalidArgument("SeparableFilter: null data");
  // Offsets within a plane and a row are 32-bit in the kernel.
  if (shape.height > std::numeric_limits<int>::max() ||
      shape.width * shape.channels > std::numeric_limits<int>::max() / 2) {
    return InvalidArgument("SeparableFilter: rows of at most 2^30 elements and 2^31 rows");
  }
  return Status::Ok();
}

// Row and column taps both in device memory, never copied to a buffer of their own (which a graph
// nested in another, as XLA's command buffers nest them, could not allocate): both uploaded into
// one lease of the constant bank where it holds them, else read in place.
template <class In, class T>
Status LaunchFromDeviceTables(cudaStream_t stream, const In* x, In* y, const SeparableShape& shape,
                              const TableView<T>& row, const TableView<T>& column,
                              LaunchReport* report) {
  using BankOf = separable_taps_banks::Of<T>;
  bool capturing = false;
  CONSTMEM_RETURN_IF_ERROR(IsCapturing(stream, &capturing));
  int device = 0;
  if (capturing) {
    CONSTMEM_RETURN_IF_CUDA_ERROR(cudaGetDevice(&device), "cudaGetDevice");
  } else {
    CONSTMEM_RETURN_IF_ERROR(detail::DeviceOfStream(stream, &device));
  }
  CONSTMEM_RETURN_IF_ERROR(CheckDeviceOrdinal(device));
  ScopedDevice guard(device);
  CONSTMEM_RETURN_IF_ERROR(guard.status());
  const std::int64_t total = row.size + column.size;
  // A captured launch reads them in place: the bank is not the graph's to write.
  const Placement placement = capturing ? Placement::kGlobalMemory
                                        : SeparableFilterPlacement<T>(total, SourceKind::kDevice);
  if (report != nullptr) {
    *report = LaunchReport(placement);
    report->captured = capturing;
  }
  const std::size_t no_limit = std::numeric_limits<std::size_t>::max();
  if (placement == Placement::kConstantBank) {
    Lease<T> lease;
    CONSTMEM_RETURN_IF_ERROR(
        BankOf::get().Acquire(stream, static_cast<std::size_t>(total), nullptr, &lease));
    CONSTMEM_RETURN_IF_ERROR(lease.UploadAt(0, row.values, row.size, SourceKind::kDevice));
    CONSTMEM_RETURN_IF_ERROR(
        lease.UploadAt(row.size, column.values, column.size, SourceKind::kDevice));
    Count(Counter::kConstantBankLaunch);
    using Reader = typename BankOf::Reader;
    const RowAndColumnTaps<Reader> taps{Reader{lease.offset()},
                                        Reader{lease.offset() + static_cast<int>(row.size)}};
    CONSTMEM_RETURN_IF_ERROR(
        (LaunchKernels<In, T>(device, stream, x, y, shape, taps, SeparateTaps(shape), no_limit)));
    return lease.Release();
  }
  Count(capturing ? Counter::kCapturedLaunch : Counter::kGlobalMemoryLaunch);
  const RowAndColumnTaps<GlobalTableReader<T>> taps{{row.values}, {column.values}};
  return LaunchKernels<In, T>(device, stream, x, y, shape, taps, SeparateTaps(shape), no_limit);
}

}  // namespace

template <class T>
Placement SeparableFilterPlacement(std::int64_t count, SourceKind source) {
  return ChoosePlacementFor<T>(count, source, SeparableLimits<T>());
}

template <class In>
int SeparableFilterBlockThreads(const SeparableShape& shape, std::size_t shared_bytes_per_block) {
  using T = typename SeparableCompute<In>::type;
  bool interleave = false;
  const int tile = Fused(shape) ? ChooseTile<T>(shape, shared_bytes_per_block, &interleave) : 0;
  if (tile != 0) return tile;
  return RowPassSharedBytes<T>() <= shared_bytes_per_block ? kTwoPassThreads : 0;
}

template <class In, class T>
Status LaunchSeparableFilterWithSharedMemory(GpuStream stream, const In* x, In* y,
                                             const SeparableShape& shape, const TableView<T>& taps,
                                             Placement placement,
                                             std::size_t shared_bytes_per_block,
                                             LaunchReport* report) {
  static_assert(std::is_same<T, typename SeparableCompute<In>::type>::value,
                "taps of the compute type");
  if (report != nullptr) *report = LaunchReport(placement);
  CONSTMEM_RETURN_IF_ERROR(CheckSeparableArguments(shape, taps.size));
  if (taps.values == nullptr && taps.size > 0) return InvalidArgument("SeparableFilter: null taps");
  if (shape.Elements() == 0) return Status::Ok();
  CONSTMEM_RETURN_IF_ERROR(CheckSeparableData(shape, x, y));
  return LaunchWithTable<DefaultByValueTable<T>, separable_taps_banks::Of<T>>(
      stream, taps, placement,
      [&](int device, const auto& reader) {
        using Reader = std::decay_t<decltype(reader)>;
        if constexpr (std::is_same<Reader, DefaultByValueTable<T>>::value) {
          return LaunchKernels<In, T>(device, stream, x, y, shape, reader, JoinedTaps(shape),
                                      shared_bytes_per_block);
        } else {
          return LaunchKernels<In, T>(device, stream, x, y, shape,
                                      RowAndColumnTaps<Reader>{reader, reader}, JoinedTaps(shape),
                                      shared_bytes_per_block);
        }
      },
      report);
}

template <class In, class T>
Status LaunchSeparableFilterWithPlacement(GpuStream stream, const In* x, In* y,
                                          const SeparableShape& shape, const TableView<T>& taps,
                                          Placement placement, LaunchReport* report) {
  return LaunchSeparableFilterWithSharedMemory(stream, x, y, shape, taps, placement,
                                               std::numeric_limits<std::size_t>::max(), report);
}

template <class In, class T>
Status LaunchSeparableFilter(GpuStream stream, const In* x, In* y, const SeparableShape& shape,
                             const TableView<T>& taps, LaunchReport* report) {
  return LaunchSeparableFilterWithPlacement(
      stream, x, y, shape, taps, SeparableFilterPlacement<T>(taps.size, taps.source), report);
}

template <class In, class T>
Status LaunchSeparableFilter(GpuStream stream, const In* x, In* y, const SeparableShape& shape,
                             const TableView<T>& row, const TableView<T>& column,
                             LaunchReport* report) {
  const std::int64_t blocks = shape.per_image_taps ? shape.images : 1;
  if (row.size != blocks * shape.kw || column.size != blocks * shape.kh) {
    return InvalidArgument("SeparableFilter needs " + std::to_string(blocks * shape.kw) +
                           " row taps and " + std::to_string(blocks * shape.kh) +
                           " column taps; got " + std::to_string(row.size) + " and " +
                           std::to_string(column.size));
  }
  if (row.values == nullptr || column.values == nullptr) {
    return InvalidArgument("SeparableFilter: null taps");
  }
  const bool row_host = row.source != SourceKind::kDevice;
  const bool column_host = column.source != SourceKind::kDevice;
  if (row_host && column_host) {
    const std::vector<T> joined = JoinSeparableTaps(shape, row.values, column.values);
    const TableView<T> table{joined.data(), shape.TableSize(), SourceKind::kPageableHost,
                             row.repeats && column.repeats};
    return LaunchSeparableFilter(stream, x, y, shape, table, report);
  }
  if (shape.Elements() == 0) return Status::Ok();
  CONSTMEM_RETURN_IF_ERROR(CheckSeparableData(shape, x, y));
  if (!row_host && !column_host) {
    return LaunchFromDeviceTables(stream, x, y, shape, row, column, report);
  }
  // One table from the host, one from the device: the host one copied to the device first, into a
  // buffer freed on the stream after the launch.
  bool capturing = false;
  CONSTMEM_RETURN_IF_ERROR(IsCapturing(stream, &capturing));
  if (capturing) {
    return InvalidArgument(
        "under CUDA graph capture SeparableFilter takes its row and column taps both from the host "
        "or both from the device");
  }
  int device = 0;
  CONSTMEM_RETURN_IF_ERROR(detail::DeviceOfStream(stream, &device));
  ScopedDevice guard(device);
  CONSTMEM_RETURN_IF_ERROR(guard.status());
  const TableView<T>& host = row_host ? row : column;
  const std::size_t host_bytes = static_cast<std::size_t>(host.size) * sizeof(T);
  StreamOrderedBuffer buffer;
  CONSTMEM_RETURN_IF_ERROR(buffer.Allocate(stream, device, host_bytes));
  CONSTMEM_RETURN_IF_ERROR(
      CopyTableToDevice(buffer.data(), host.values, host_bytes, host.source, stream));
  const TableView<T> uploaded{static_cast<const T*>(buffer.data()), host.size, SourceKind::kDevice};
  CONSTMEM_RETURN_IF_ERROR(LaunchFromDeviceTables(stream, x, y, shape, row_host ? uploaded : row,
                                                  row_host ? column : uploaded, report));
  return buffer.Release();  // the free is enqueued after the launch
}

#define CONSTMEM_INSTANTIATE_SEPARABLE(In, T)                                                    \
  template Status LaunchSeparableFilter<In, T>(GpuStream, const In*, In*, const SeparableShape&, \
                                               const TableView<T>&, LaunchReport*);              \
  template Status LaunchSeparableFilter<In, T>(GpuStream, const In*, In*, const SeparableShape&, \
                                               const TableView<T>&, const TableView<T>&,         \
                                               LaunchReport*);                                   \
  template Status LaunchSeparableFilterWithPlacement<In, T>(                                     \
      GpuStream, const In*, In*, const SeparableShape&, const TableView<T>&, Placement,          \
      LaunchReport*);                                                                            \
  template Status LaunchSeparableFilterWithSharedMemory<In, T>(                                  \
      GpuStream, const In*, In*, const SeparableShape&, const TableView<T>&, Placement,          \
      std::size_t, LaunchReport*);                                                               \
  template int SeparableFilterBlockThreads<In>(const SeparableShape&, std::size_t);
CONSTMEM_INSTANTIATE_SEPARABLE(float, float)
CONSTMEM_INSTANTIATE_SEPARABLE(double, double)
CONSTMEM_INSTANTIATE_SEPARABLE(std::uint8_t, float)
#undef CONSTMEM_INSTANTIATE_SEPARABLE
template Placement SeparableFilterPlacement<float>(std::int64_t, SourceKind);
template Placement SeparableFilterPlacement<double>(std::int64_t, SourceKind);

}  // namespace ops
}  // namespace constmem
