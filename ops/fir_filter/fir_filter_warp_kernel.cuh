// SPDX-License-Identifier: Apache-2.0
// FirFilter's CUDA kernel for filters of up to kMaxWarpTeamTaps taps (FirWarpTeamKernel): a warp a
// tile, so that its warps synchronize alone and never wait for each other. A kernel of its own
// because its staging (bulk copies on sm_90, rounds from held addresses) and its tap loop (shared
// loads from a held 32-bit address) differ from the block teams'; fir_filter_tile.cuh holds the
// helpers it shares with them and describes the tiles.
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

// kShift: how far a tile's first sample lies past the vector boundary its staging starts from
// (the row's samples are staged as whole vectors, so SAME padding of an odd count shifts them).
// Filters of up to kMaxWarpTeamTaps taps, a warp a tile, kBlock / 32 teams a block.
// In: the data's type; T, its compute type (kLanded: float for 16-bit data).
template <class In, class Taps, int kShift, int kBlock>
__global__ void __launch_bounds__(kBlock, kMinBlocksOfThreads* kThreads / kBlock)
    FirWarpTeamKernel(const In* x, In* y, std::int64_t rows, std::int64_t length,
                      std::int64_t outputs, int tap_count, int pad_left,
                      const __grid_constant__ Taps taps) {
  using T = ComputeTypeOf<In>;
  constexpr bool kLandedSamples = kLanded<In>;
  constexpr int kTeam = 32;
  using Tune = FirTuning<T, kTeam, kBlock>;
  using V = typename Vector16<T>::type;
  constexpr int R = Tune::kOutputs;
  constexpr int K = Tune::kTapsPerSegment;
  constexpr int L = Tune::kLanes;
  constexpr int S = RingSegments<T, kShift, kTeam>();
  constexpr int B = kLandedSamples ? 1 : Tune::kBuffers;
  constexpr int kTileVectorsPerThread = Tune::kTile / L / kTeam;
  constexpr int kDataLanes = 16 / static_cast<int>(sizeof(In));
  constexpr bool kBulk = kBulkCopies && !kLandedSamples;
  unsigned char* const shared_bytes = DynamicSharedMemory();
  const int staged_count = StagedSamples<T, kTeam>(tap_count);
  const int buffer_elements = BufferElements<T, kTeam>(tap_count);
  const unsigned team_in_block = threadIdx.x / kTeam;
  T* const buffers = reinterpret_cast<T*>(shared_bytes) + team_in_block * B * buffer_elements;
  // 16-bit data: each team's landing buffer, after every team's float buffer.
  [[maybe_unused]] In* const landing =
      reinterpret_cast<In*>(reinterpret_cast<T*>(shared_bytes) +
                            Tune::kTeamsPerBlock * B * buffer_elements) +
      team_in_block * LandingElements<In, kTeam>(tap_count);
  const unsigned thread = threadIdx.x % kTeam;
  // Rows start on 16-byte boundaries: the staging copies whole vectors.
  const bool vector_rows = reinterpret_cast<std::uintptr_t>(x) % 16 == 0 && length % L == 0;
  const bool vector_output =
      reinterpret_cast<std::uintptr_t>(y) % 16 == 0 && outputs % kDataLanes == 0;
  // Whole-vector rows and outputs move by bulk copies, each buffer's arrival signalled on its
  // barrier (after the block's buffers); bit b of `parities` is the phase of buffer b's barrier to
  // wait for.
  [[maybe_unused]] const bool bulk = kBulk && vector_rows && vector_output;
  const unsigned barriers =
      static_cast<unsigned>(__cvta_generic_to_shared(shared_bytes)) +
      static_cast<unsigned>((Tune::kTeamsPerBlock * B * buffer_elements * sizeof(T)) +
                            team_in_block * B * sizeof(std::uint64_t));
  [[maybe_unused]] unsigned parities = 0;
  if constexpr (kBulk) {
    if (bulk) {
      if (thread == 0) {
        for (int b = 0; b < B; ++b) BarrierInit(barriers + b * sizeof(std::uint64_t));
      }
      __syncwarp();
    }
  }

  const TileWalk<Tune> walk(outputs, gridDim.x);
  // Staged sample e of a tile is row sample column * kTile - pad_left - kShift + e; staged vector
  // k = thread + i * kTeam sits at PaddedVector(k). Whole-vector rows are copied in rounds of one
  // vector a thread from held base addresses (every round's addresses are the first round's plus
  // constants).
  constexpr int kRoundStride = PaddedVector<T, kTeam>(kTeam);
  constexpr int kStageRounds = (StagedSamples<T, kTeam>(kMaxWarpTeamTaps) / L + kTeam - 1) / kTeam;
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
    if constexpr (kBulk) {
      if (bulk) {  // one copy of the samples inside the row; threads write the zeros outside it
        auto clamp = [&](std::int64_t k) {
          return static_cast<int>(k < 0 ? 0 : k > staged_vectors ? staged_vectors : k);
        };
        const int inside_begin = clamp(-first);
        const int inside_end = clamp(length / L - first);
        // The bulk store of the tile that last used this buffer has read it.
        if (thread == 0) BulkStoresReadAll<B - 2>();
        __syncwarp();
        V* const vectors = reinterpret_cast<V*>(buffer);
        for (int k = thread; k < inside_begin; k += kTeam) vectors[k] = V{};
        for (int k = inside_end + static_cast<int>(thread); k < staged_vectors; k += kTeam) {
          vectors[k] = V{};
        }
        if (thread == 0) {
          BulkLoad(static_cast<unsigned>(__cvta_generic_to_shared(vectors + inside_begin)),
                   row_vectors + (first + inside_begin),
                   static_cast<unsigned>((inside_end - inside_begin) * sizeof(V)),
                   barriers + buffer_index * sizeof(std::uint64_t));
        }
        return;
      }
    }
    const V* from = HeldAddress(row_vectors + (first + thread));
    const auto to = static_cast<unsigned>(
        __cvta_generic_to_shared(buffer + PaddedVector<T, kTeam>(thread) * L));
    const int round_limit = staged_vectors - static_cast<int>(thread);  // i * kTeam < this
    if (first >= 0 && first + staged_vectors <= length / L) {  // the whole tile inside the row
#pragma unroll
      for (int i = 0; i < kStageRounds; ++i) {
        if (i * kTeam < round_limit) {
          CopyAsync(to + i * kRoundStride * sizeof(V), from + i * kTeam, true);
        }
      }
    } else {
      // A copy from outside the row reads nothing and is pointed at the row's start.
      const std::int64_t vectors_before_row = -first - static_cast<std::int64_t>(thread);
      const std::int64_t vectors_in_row = length / L - first - static_cast<std::int64_t>(thread);
#pragma unroll
      for (int i = 0; i < kStageRounds; ++i) {
        if (i * kTeam < round_limit) {
          const bool inside = i * kTeam >= vectors_before_row && i * kTeam < vectors_in_row;
          CopyAsync(to + i * kRoundStride * sizeof(V), inside ? from + i * kTeam : row_vectors,
                    inside);
        }
      }
    }
  };

  const std::int64_t team =
      static_cast<std::int64_t>(blockIdx.x) * Tune::kTeamsPerBlock + team_in_block;
  std::int64_t row, column;
  walk.Start(team, &row, &column);
  if (row < rows) stage(0, row, column);
  CopyAsyncCommit();
  for (int current = 0; row < rows; walk.Advance(&row, &column), current = (current + 1) % B) {
    T* const staged = buffers + current * buffer_elements;
    if constexpr (kBulk) {
      if (bulk) {
        BarrierWait(barriers + current * sizeof(std::uint64_t), parities >> current & 1);
        parities ^= 1u << current;
      }
    }
    CopyAsyncWaitAll();
    // This tile's samples are visible to the warp; every thread is done with the buffer the next
    // tile goes to.
    __syncwarp();
    if constexpr (kLandedSamples) {
      LandSamples<T, kTeam>(staged, landing, x + row * length,
                            column * Tune::kTile - pad_left - kShift, staged_count, thread);
      __syncwarp();  // the float tile is whole and the landing buffer free
    }
    {
      std::int64_t next_row = row, next_column = column;
      walk.Advance(&next_row, &next_column);
      if (next_row < rows) stage((current + 1) % B, next_row, next_column);
      CopyAsyncCommit();
    }

    // Loads from the thread's 32-bit shared address held in a register.
    T* const thread_samples = staged + Padded<T, kTeam>(thread * R);  // staged sample `first`
    const auto thread_samples_address =
        static_cast<unsigned>(__cvta_generic_to_shared(thread_samples));
    auto load = [&](T(&segment)[K], unsigned offset) {  // offset: whole segments past first
      const unsigned padded = Tune::kPadded ? offset + offset / R * L : offset;
#pragma unroll
      for (int q = 0; q < K / L; ++q) {
        V v;
        LoadShared(thread_samples_address + (padded + q * L) * static_cast<unsigned>(sizeof(T)),
                   &v);
        const T* lanes = reinterpret_cast<const T*>(&v);
#pragma unroll
        for (int l = 0; l < L; ++l) segment[q * L + l] = lanes[l];
      }
    };
    ThreadOutputs<T, Tune, kShift, S> out;
#pragma unroll
    for (int s = 0; s < S; ++s) load(out.ring[s], s * K);
    // A whole turn of the ring per iteration, so that every segment index is a constant; each
    // segment's taps are guarded against the taps left from the turn's start, and (unpadded) the
    // segment is refilled from the turn's shared address with constant offsets.
    const int whole_segment_taps = tap_count / K * K;
    for (int turn = 0; turn < whole_segment_taps; turn += S * K) {
      // This turn's and later turns' taps; from a shuffle the compiler knows it the same in every
      // thread and spares each segment's guard a divergence barrier.
      const int turn_taps = __shfl_sync(~0u, whole_segment_taps - turn, 0);
      const unsigned turn_address =
          HeldAddress(thread_samples_address + turn * static_cast<unsigned>(sizeof(T)));
#pragma unroll
      for (int s = 0; s < S; ++s) {
        if (s * K < turn_taps) {
          out.ApplySegment(taps, turn + s * K, s);
          if constexpr (!Tune::kPadded) {
#pragma unroll
            for (int q = 0; q < K / L; ++q) {
              V v;
              LoadShared(turn_address + ((s + S) * K + q * L) * static_cast<unsigned>(sizeof(T)),
                         &v);
              const T* lanes = reinterpret_cast<const T*>(&v);
#pragma unroll
              for (int l = 0; l < L; ++l) out.ring[s][q * L + l] = lanes[l];
            }
          } else {
            load(out.ring[s], turn + s * K + S * K);
          }
        }
      }
    }
    const int c = whole_segment_taps;
    if (c < tap_count) {
#pragma unroll
      for (int s = 0; s < S; ++s) load(out.ring[s], c + s * K);
      out.ApplyLastTaps(taps, c, tap_count);
    }

    // The outputs leave through shared memory, so that a warp's stores are contiguous: written
    // straight from registers, each 16-byte store would land 128 bytes from its neighbour's.
    __syncwarp();  // every thread is done reading the staged samples
    out.StoreToShared(thread_samples);
    const std::int64_t first_output = column * Tune::kTile;
    In* tile_y = y + row * outputs + first_output;
    const std::int64_t remaining = outputs - first_output;
    const int tile_outputs = remaining < Tune::kTile ? static_cast<int>(remaining) : Tune::kTile;
    if constexpr (kBulk) {
      if (bulk) {  // unpadded: the tile's outputs lie in order from the buffer's start
        FenceForBulkCopies();
        __syncwarp();
        if (thread == 0) {
          BulkStore(tile_y, static_cast<unsigned>(__cvta_generic_to_shared(staged)),
                    static_cast<unsigned>(tile_outputs * sizeof(T)));
        }
        continue;
      }
    }
    __syncwarp();
    if constexpr (kLandedSamples) {
      StoreNarrowOutputs<T, kTeam>(staged, tile_y, tile_outputs, thread, vector_output);
      continue;
    } else if (!vector_output) {
      StoreOutputs<T, kTeam>(staged, tile_y, 0, tile_outputs, thread);
      continue;
    }
    // From the held shared address, constant offsets a round.
    const int vectors = tile_outputs / L;
    const int round_limit = vectors - static_cast<int>(thread);  // i * kTeam < this
    const auto from = static_cast<unsigned>(
        __cvta_generic_to_shared(staged + PaddedVector<T, kTeam>(thread) * L));
    V* const to = reinterpret_cast<V*>(tile_y) + thread;
#pragma unroll
    for (int i = 0; i < kTileVectorsPerThread; ++i) {
      if (i * kTeam < round_limit) {
        V v;
        LoadShared(from + i * kRoundStride * sizeof(V), &v);
        to[i * kTeam] = v;
      }
    }
    StoreOutputs<T, kTeam>(staged, tile_y, vectors * L, tile_outputs, thread);
  }
  if constexpr (kBulk) {
    // Before the block's shared memory goes.
    if (bulk && thread == 0) BulkStoresDone();
  }
}

}  // namespace fir_kernels
}  // namespace ops
}  // namespace constmem
