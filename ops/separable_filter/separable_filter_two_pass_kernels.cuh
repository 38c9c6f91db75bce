// SPDX-License-Identifier: Apache-2.0
// SeparableFilter's two-pass CUDA kernels, for the filters no tile of the fused kernel
// (separable_filter_tile_kernel.cuh) fits in a block's shared memory: from about 300 taps float32
// on an H200. They give the fused kernel's results bit for bit, with no CUDA runtime call;
// separable_filter_plan.h holds their launch constants, separable_filter_gpu.cu launches them
// (LaunchTwoPass) over batches of planes, and tests run them on the CPU through
// constmem/testing/emulated_gpu.hpp.
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
#pragma once

#include <cstdint>

#include "separable_filter/separable_filter_device.cuh"
#include "separable_filter/separable_filter_plan.h"

namespace constmem {
namespace ops {
namespace separable_kernels {

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

}  // namespace separable_kernels
}  // namespace ops
}  // namespace constmem
