// SPDX-License-Identifier: Apache-2.0
// SeparableFilter's fused CUDA kernel (SeparableKernel): the row pass and the column pass in one
// kernel, through tiles in shared memory, with no CUDA runtime call. separable_filter_plan.h plans
// its tiles (Tile, SharedLayout, PlanTiles) and picks the one a block's shared memory holds
// (FusedTileThreads); separable_filter_gpu.cu launches it, and tests run it on the CPU through
// constmem/testing/emulated_gpu.hpp. Filters no tile fits run in two passes
// (separable_filter_two_pass_kernels.cuh), short square ones with rows in registers
// (separable_filter_register_kernel.cuh).
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
// Both passes keep several outputs a thread in registers, with a ring of samples (Slide):
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
#pragma once

#include <cstdint>
#include <type_traits>

#include "constmem/async_copy.cuh"
#include "separable_filter/separable_filter_device.cuh"
#include "separable_filter/separable_filter_plan.h"

namespace constmem {
namespace ops {
namespace separable_kernels {

// y from x in `Tile`: g's work items (PlanTiles), each a tile column over a segment of rows of a
// plane, over a persistent grid; its dynamic shared memory is SharedLayout<Tile, In, T>'s.
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
          // Ring row base + n, for the n < kh + RingSegments * kTapsPerRingSegment that Slide
          // reads: at most one turn of the ring past row base.
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

}  // namespace separable_kernels
}  // namespace ops
}  // namespace constmem
