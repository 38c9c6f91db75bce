// SPDX-License-Identifier: Apache-2.0
// FirFilter's CUDA kernels whose team is the whole block, for filters of more than
// kMaxWarpTeamTaps taps, whose tiles then carry less halo: FirBlockTeamKernel up to
// kFirTiledMaxTaps taps, and FirChunkedKernel for longer filters. Together because they share
// their tiles and their tap loop (ApplyStagedTaps); fir_filter_tile.cuh holds the helpers they
// share with the warp teams' kernel and describes the tiles.
//
// FirChunkedKernel runs through the block teams' tiles one chunk of kFirTiledMaxTaps taps at a
// time: each chunk stages the tile's samples at its offset, and the outputs stay in registers
// across the chunks, so each output takes the same FMAs in the same order as on the CPU. Its taps,
// larger than the constant bank, are read from global memory with the same warp-uniform indices.
#pragma once

#include <cstdint>

#include "constmem/async_copy.cuh"
#include "constmem/numeric.hpp"
#include "constmem/tile_staging.cuh"
#include "fir_filter/fir_filter_plan.h"
#include "fir_filter/fir_filter_tile.cuh"

namespace constmem {
namespace ops {
namespace fir_kernels {

// Applies taps [0, tap_count) of `taps` to a thread's outputs from its staged samples
// (thread_samples: its first), a block team's inner loop: for a whole filter (FirBlockTeamKernel)
// or one chunk of a long one (FirChunkedKernel). A whole turn of the ring per iteration, so that
// every segment index is a constant; the taps are counted segment by segment, which ran faster for
// block teams.
template <class T, class Tune, int kShift, int S, class Taps>
__device__ __forceinline__ void ApplyStagedTaps(ThreadOutputs<T, Tune, kShift, S>& out,
                                                const Taps& taps, const T* thread_samples,
                                                int tap_count) {
  using V = typename Vector16<T>::type;
  constexpr int R = Tune::kOutputs;
  constexpr int K = Tune::kTapsPerSegment;
  constexpr int L = Tune::kLanes;
  auto load = [&](T(&segment)[K], unsigned offset) {  // offset: whole segments past first
    const unsigned padded = Tune::kPadded ? offset + offset / R * L : offset;
#pragma unroll
    for (int q = 0; q < K / L; ++q) {
      const V v = reinterpret_cast<const V*>(thread_samples + padded)[q];
      const T* lanes = reinterpret_cast<const T*>(&v);
#pragma unroll
      for (int l = 0; l < L; ++l) segment[q * L + l] = lanes[l];
    }
  };
#pragma unroll
  for (int s = 0; s < S; ++s) load(out.ring[s], s * K);
  int c = 0;  // taps applied
  const int last_whole_segment = tap_count - K;
  while (c <= last_whole_segment) {
#pragma unroll
    for (int s = 0; s < S; ++s) {
      if (c <= last_whole_segment) {
        out.ApplySegment(taps, c, s);
        load(out.ring[s], c + S * K);
        c += K;
      }
    }
  }
  if (c < tap_count) {
#pragma unroll
    for (int s = 0; s < S; ++s) load(out.ring[s], c + s * K);
    out.ApplyLastTaps(taps, c, tap_count);
  }
}

// Longer filters: the block of kBlock threads is one team, whose tiles carry less halo.
template <class In, class Taps, int kShift, int kBlock>
__global__ void __launch_bounds__(kBlock, kMinBlocksOfThreads* kThreads / kBlock)
    FirBlockTeamKernel(const In* x, In* y, std::int64_t rows, std::int64_t length,
                       std::int64_t outputs, int tap_count, int pad_left,
                       const __grid_constant__ Taps taps) {
  using T = ComputeTypeOf<In>;
  constexpr bool kLandedSamples = kLanded<In>;
  constexpr int kTeam = kBlock;
  using Tune = FirTuning<T, kTeam, kBlock>;
  using V = typename Vector16<T>::type;
  constexpr int R = Tune::kOutputs;
  constexpr int L = Tune::kLanes;
  constexpr int S = RingSegments<T, kShift, kTeam>();
  constexpr int B = kLandedSamples ? 1 : Tune::kBuffers;
  constexpr int kTileVectorsPerThread = Tune::kTile / L / kTeam;
  constexpr int kDataLanes = 16 / static_cast<int>(sizeof(In));
  unsigned char* const shared_bytes = DynamicSharedMemory();
  const int staged_count = StagedSamples<T, kTeam>(tap_count);
  const int buffer_elements = BufferElements<T, kTeam>(tap_count);
  T* const buffers = reinterpret_cast<T*>(shared_bytes);
  [[maybe_unused]] In* const landing = reinterpret_cast<In*>(buffers + B * buffer_elements);
  const unsigned thread = threadIdx.x;
  const bool vector_rows = reinterpret_cast<std::uintptr_t>(x) % 16 == 0 && length % L == 0;
  const bool vector_output =
      reinterpret_cast<std::uintptr_t>(y) % 16 == 0 && outputs % kDataLanes == 0;

  const TileWalk<Tune> walk(outputs, gridDim.x);
  // Staged vector k = thread + i * kTeam sits at PaddedVector(k); a loop of the block's own, which
  // ran faster for block teams on an H200 than the warp teams' held addresses.
  constexpr int kRoundStride = PaddedVector<T, kTeam>(kTeam);
  auto stage = [&](int buffer_index, std::int64_t row, std::int64_t column) {
    T* const buffer = buffers + buffer_index * buffer_elements;
    const In* row_x = x + row * length;
    const std::int64_t first_sample = column * Tune::kTile - pad_left - kShift;
    if constexpr (kLandedSamples) {
      (void)buffer;
      StageSpan(landing, row_x, first_sample, staged_count, length, thread, kTeam);
      return;
    } else if (!vector_rows) {
      for (int e = thread; e < staged_count; e += kTeam) {  // sample by sample
        const std::int64_t s = first_sample + e;
        const bool inside = s >= 0 && s < length;
        CopyAsync(buffer + Padded<T, kTeam>(e), inside ? row_x + s : row_x, inside);
      }
      return;
    }
    const V* row_vectors = reinterpret_cast<const V*>(row_x);
    const std::int64_t first = first_sample / L;  // exact: pad_left + kShift is whole vectors
    const int staged_vectors = staged_count / L;
    V* const staged_vectors_at = reinterpret_cast<V*>(buffer);
    const V* from = row_vectors + (first + thread);
    V* to = staged_vectors_at + PaddedVector<T, kTeam>(thread);
    // Staged vectors [inside_begin, inside_begin + inside_count) lie inside the row; a copy from
    // outside reads nothing and is pointed at the row's start.
    auto clamp = [&](std::int64_t k) {
      return static_cast<int>(k < 0 ? 0 : k > staged_vectors ? staged_vectors : k);
    };
    const int inside_begin = clamp(-first);
    const unsigned inside_count = clamp(length / L - first) - inside_begin;
    const unsigned k0 = thread - inside_begin;
    // Away from the tensor's first and last row every address read from lies inside the tensor,
    // so a copy from outside the row may keep its own.
    const std::int64_t first_in_tensor = row * (length / L) + first;
    if (first_in_tensor >= 0 && first_in_tensor + staged_vectors <= rows * (length / L)) {
#pragma unroll
      for (int i = 0; i < kTileVectorsPerThread; ++i) {
        CopyAsync(to + i * kRoundStride, from + i * kTeam, k0 + i * kTeam < inside_count);
      }
    } else {
#pragma unroll
      for (int i = 0; i < kTileVectorsPerThread; ++i) {
        const bool inside = k0 + i * kTeam < inside_count;
        CopyAsync(to + i * kRoundStride, inside ? from + i * kTeam : row_vectors, inside);
      }
    }
    for (int k = kTileVectorsPerThread * kTeam + thread; k < staged_vectors; k += kTeam) {
      const bool inside = static_cast<unsigned>(k - inside_begin) < inside_count;
      CopyAsync(staged_vectors_at + PaddedVector<T, kTeam>(k),
                inside ? row_vectors + (first + k) : row_vectors, inside);
    }
  };

  std::int64_t row, column;
  walk.Start(blockIdx.x, &row, &column);
  if (row < rows) stage(0, row, column);
  CopyAsyncCommit();
  for (int current = 0; row < rows; walk.Advance(&row, &column), current = (current + 1) % B) {
    T* const staged = buffers + current * buffer_elements;
    CopyAsyncWaitAll();
    // This tile's samples are visible to the block; every thread is done with the buffer the next
    // tile goes to.
    __syncthreads();
    if constexpr (kLandedSamples) {
      LandSamples<T, kTeam>(staged, landing, x + row * length,
                            column * Tune::kTile - pad_left - kShift, staged_count, thread);
      __syncthreads();  // the float tile is whole and the landing buffer free
    }
    {
      std::int64_t next_row = row, next_column = column;
      walk.Advance(&next_row, &next_column);
      if (next_row < rows) stage((current + 1) % B, next_row, next_column);
      CopyAsyncCommit();
    }

    T* const thread_samples = staged + Padded<T, kTeam>(thread * R);  // staged sample `first`
    ThreadOutputs<T, Tune, kShift, S> out;
    ApplyStagedTaps(out, taps, thread_samples, tap_count);

    __syncthreads();  // every thread is done reading the staged samples
    out.StoreToShared(thread_samples);
    const std::int64_t first_output = column * Tune::kTile;
    In* tile_y = y + row * outputs + first_output;
    const std::int64_t remaining = outputs - first_output;
    const int tile_outputs = remaining < Tune::kTile ? static_cast<int>(remaining) : Tune::kTile;
    __syncthreads();
    if constexpr (kLandedSamples) {
      StoreNarrowOutputs<T, kTeam>(staged, tile_y, tile_outputs, thread, vector_output);
      continue;
    } else if (!vector_output) {
      StoreOutputs<T, kTeam>(staged, tile_y, 0, tile_outputs, thread);
      continue;
    }
    const int vectors = tile_outputs / L;
#pragma unroll
    for (int i = 0; i < kTileVectorsPerThread; ++i) {
      const int v = static_cast<int>(i * kTeam + thread);
      if (v < vectors) {
        reinterpret_cast<V*>(tile_y)[v] =
            reinterpret_cast<const V*>(staged)[PaddedVector<T, kTeam>(v)];
      }
    }
    StoreOutputs<T, kTeam>(staged, tile_y, vectors * L, tile_outputs, thread);
  }
}

// Taps first .. first + n - 1 of a reader as taps 0 .. n - 1: a chunk of a long filter.
template <class Taps>
struct TapsFrom {
  const Taps& taps;
  int first;
  __device__ __forceinline__ auto operator[](int j) const { return taps[first + j]; }
};

// Filters of more than kFirTiledMaxTaps taps: the block team's tiles, the taps walked in chunks of
// kFirTiledMaxTaps. For each chunk the tile's samples at that chunk's offset (the tile plus the
// chunk's halo) are staged afresh, while the outputs stay in registers from chunk to chunk: each
// output still takes one FMA per tap in tap order. A step is one chunk of one tile; the next
// step's samples arrive in the other buffer while this one computes.
template <class In, class Taps, int kShift, int kBlock>
__global__ void __launch_bounds__(kBlock, kMinBlocksOfThreads* kThreads / kBlock)
    FirChunkedKernel(const In* x, In* y, std::int64_t rows, std::int64_t length,
                     std::int64_t outputs, int tap_count, int pad_left,
                     const __grid_constant__ Taps taps) {
  using T = ComputeTypeOf<In>;
  constexpr bool kLandedSamples = kLanded<In>;
  constexpr int kTeam = kBlock;
  constexpr int kChunkTaps = static_cast<int>(kFirTiledMaxTaps);
  using Tune = FirTuning<T, kTeam, kBlock>;
  using V = typename Vector16<T>::type;
  constexpr int R = Tune::kOutputs;
  constexpr int K = Tune::kTapsPerSegment;
  constexpr int L = Tune::kLanes;
  constexpr int S = RingSegments<T, kShift, kTeam>();
  constexpr int B = kLandedSamples ? 1 : Tune::kBuffers;
  constexpr int kTileVectorsPerThread = Tune::kTile / L / kTeam;
  constexpr int kDataLanes = 16 / static_cast<int>(sizeof(In));
  static_assert(kChunkTaps % K == 0 && kChunkTaps % L == 0, "chunks start on whole vectors");
  unsigned char* const shared_bytes = DynamicSharedMemory();
  const int buffer_elements = BufferElements<T, kTeam>(kChunkTaps);
  const int chunks = (tap_count + kChunkTaps - 1) / kChunkTaps;
  T* const buffers = reinterpret_cast<T*>(shared_bytes);
  [[maybe_unused]] In* const landing = reinterpret_cast<In*>(buffers + B * buffer_elements);
  const unsigned thread = threadIdx.x;
  const bool vector_rows = reinterpret_cast<std::uintptr_t>(x) % 16 == 0 && length % L == 0;
  const bool vector_output =
      reinterpret_cast<std::uintptr_t>(y) % 16 == 0 && outputs % kDataLanes == 0;

  const TileWalk<Tune> walk(outputs, gridDim.x);
  // The samples chunk `chunk` of the tile at (row, column) reads: staged sample e is row sample
  // column * kTile - pad_left - kShift + chunk * kChunkTaps + e.
  auto stage = [&](int buffer_index, std::int64_t row, std::int64_t column, int chunk) {
    T* const buffer = buffers + buffer_index * buffer_elements;
    const In* row_x = x + row * length;
    const int chunk_taps = min(kChunkTaps, tap_count - chunk * kChunkTaps);
    const int staged_count = StagedSamples<T, kTeam>(chunk_taps);
    const std::int64_t first_sample =
        column * Tune::kTile - pad_left - kShift + static_cast<std::int64_t>(chunk) * kChunkTaps;
    if constexpr (kLandedSamples) {
      (void)buffer;
      StageSpan(landing, row_x, first_sample, staged_count, length, thread, kTeam);
      return;
    } else if (!vector_rows) {
      for (int e = thread; e < staged_count; e += kTeam) {  // sample by sample
        const std::int64_t s = first_sample + e;
        const bool inside = s >= 0 && s < length;
        CopyAsync(buffer + Padded<T, kTeam>(e), inside ? row_x + s : row_x, inside);
      }
      return;
    }
    const V* row_vectors = reinterpret_cast<const V*>(row_x);
    const std::int64_t first = first_sample / L;  // exact: pad_left + kShift is whole vectors
    const int staged_vectors = staged_count / L;
    V* const staged_vectors_at = reinterpret_cast<V*>(buffer);
    // Staged vectors [inside_begin, inside_begin + inside_count) lie inside the row; a copy from
    // outside reads nothing and is pointed at the row's start.
    auto clamp = [&](std::int64_t k) {
      return static_cast<int>(k < 0 ? 0 : k > staged_vectors ? staged_vectors : k);
    };
    const int inside_begin = clamp(-first);
    const int inside_end = clamp(length / L - first);
    for (int k = thread; k < staged_vectors; k += kTeam) {
      const bool inside = k >= inside_begin && k < inside_end;
      CopyAsync(staged_vectors_at + PaddedVector<T, kTeam>(k),
                inside ? row_vectors + (first + k) : row_vectors, inside);
    }
  };

  std::int64_t row, column;
  walk.Start(blockIdx.x, &row, &column);
  int chunk = 0;
  if (row < rows) stage(0, row, column, 0);
  CopyAsyncCommit();
  ThreadOutputs<T, Tune, kShift, S> out;
  for (int current = 0; row < rows; current = (current + 1) % B) {
    T* const staged = buffers + current * buffer_elements;
    CopyAsyncWaitAll();
    // This step's samples are visible to the block; every thread is done with the buffer the next
    // step goes to.
    __syncthreads();
    if constexpr (kLandedSamples) {
      LandSamples<T, kTeam>(
          staged, landing, x + row * length,
          column * Tune::kTile - pad_left - kShift + static_cast<std::int64_t>(chunk) * kChunkTaps,
          StagedSamples<T, kTeam>(min(kChunkTaps, tap_count - chunk * kChunkTaps)), thread);
      __syncthreads();  // the float tile is whole and the landing buffer free
    }
    std::int64_t next_row = row, next_column = column;
    int next_chunk = chunk + 1;
    if (next_chunk == chunks) {
      walk.Advance(&next_row, &next_column);
      next_chunk = 0;
    }
    if (next_row < rows) stage((current + 1) % B, next_row, next_column, next_chunk);
    CopyAsyncCommit();

    if (chunk == 0) {
#pragma unroll
      for (int r = 0; r < R; ++r) out.acc[r] = T(0);
    }
    const int chunk_taps = min(kChunkTaps, tap_count - chunk * kChunkTaps);
    const TapsFrom<Taps> chunk_reader{taps, chunk * kChunkTaps};
    T* const thread_samples = staged + Padded<T, kTeam>(thread * R);  // staged sample `first`
    ApplyStagedTaps(out, chunk_reader, thread_samples, chunk_taps);

    if (chunk + 1 == chunks) {  // the tile's last chunk: its outputs leave
      __syncthreads();          // every thread is done reading the staged samples
      out.StoreToShared(thread_samples);
      const std::int64_t first_output = column * Tune::kTile;
      In* tile_y = y + row * outputs + first_output;
      const std::int64_t remaining = outputs - first_output;
      const int tile_outputs = remaining < Tune::kTile ? static_cast<int>(remaining) : Tune::kTile;
      __syncthreads();
      if constexpr (kLandedSamples) {
        StoreNarrowOutputs<T, kTeam>(staged, tile_y, tile_outputs, thread, vector_output);
      } else if (!vector_output) {
        StoreOutputs<T, kTeam>(staged, tile_y, 0, tile_outputs, thread);
      } else {
        const int vectors = tile_outputs / L;
#pragma unroll
        for (int i = 0; i < kTileVectorsPerThread; ++i) {
          const int v = static_cast<int>(i * kTeam + thread);
          if (v < vectors) {
            reinterpret_cast<V*>(tile_y)[v] =
                reinterpret_cast<const V*>(staged)[PaddedVector<T, kTeam>(v)];
          }
        }
        StoreOutputs<T, kTeam>(staged, tile_y, vectors * L, tile_outputs, thread);
      }
    }
    row = next_row;
    column = next_column;
    chunk = next_chunk;
  }
}

}  // namespace fir_kernels
}  // namespace ops
}  // namespace constmem
