// SPDX-License-Identifier: Apache-2.0
// FirFilter's CUDA kernels and their tiles' arithmetic, with no CUDA runtime call
// (fir_filter_gpu.cu launches them; tests run them on the CPU through
// constmem/testing/emulated_gpu.hpp).
//
// A team of threads computes tiles of consecutive outputs of one row: a warp for filters of up to
// 64 taps (FirWarpTeamKernel), the whole block for longer ones (FirBlockTeamKernel), whose tiles
// carry less halo. A tile's samples plus the k-1 of halo are staged in shared memory as whole
// 16-byte vectors (zeros outside the row) by asynchronous copies, issued while the team computes
// the previous tile from another buffer; on sm_90 a warp team's tile arrives by one bulk copy and
// leaves by one bulk store. Each thread computes kOutputs consecutive outputs from a ring of
// samples in registers (ThreadOutputs): each tap, read with a warp-uniform index (constant
// memory's broadcast), feeds kOutputs FMAs, and shared memory delivers one sample per thread per
// tap, a fraction of what the FMAs consume. The outputs go back through shared memory to leave in
// coalesced stores.
//
// Filters of more than kFirTiledMaxTaps taps (FirChunkedKernel) run through the block teams'
// tiles one chunk of kFirTiledMaxTaps taps at a time: each chunk stages the tile's samples at its
// offset, and the outputs stay in registers across the chunks, so each output takes the same FMAs
// in the same order as on the CPU. Their taps, larger than the constant bank, are read from global
// memory with the same warp-uniform indices.
//
// float16 and bfloat16 data (kLanded) are computed in float, with float's tiles and registers: a
// tile's 16-bit samples land in a buffer of their own by 16-byte asynchronous copies (whatever the
// row's alignment), are converted once into the team's float buffer, and the outputs leave rounded
// to nearest even (FromCompute), 8 a 16-byte store; one float buffer a team, no bulk copies. The
// FMAs are float32's, in the same order, so the results are the CPU kernel's bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "constmem/async_copy.cuh"
#include "constmem/numeric.hpp"
#include "constmem/tile_staging.cuh"
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
// every load then computes its padded offset. Taps are applied in chunks of 16 bytes' worth (4
// float or 2 double) in warp teams: the smaller chunk keeps the loop and the code for the leftover
// taps small enough for the instruction cache. Block teams run long filters in chunks of 32 bytes:
// half the loads a tap, which matters more there than the code's size.
constexpr int kWarpTeamOutputBytes = 112;
constexpr int kBlockTeamOutputBytes = 128;
constexpr int kWarpTeamChunkBytes = 16;
constexpr int kBlockTeamChunkBytes = 32;
// Blocks of kThreads a multiprocessor that the kernels' registers must allow (__launch_bounds__).
constexpr int kMinBlocksOfThreads = 2;

// kTeam: the threads that share a tile, a warp or the block of kBlock threads. A warp synchronizes
// itself alone, so its warps never wait for each other; a block's tile carries less halo, which
// long filters need.
template <class T, int kTeam = kThreads, int kBlock = (kTeam == 32 ? kThreads : kTeam)>
struct FirTuning {
  static constexpr int kOutputs =
      (kTeam == 32 ? kWarpTeamOutputBytes : kBlockTeamOutputBytes) / static_cast<int>(sizeof(T));
  static constexpr int kChunk =
      (kTeam == 32 ? kWarpTeamChunkBytes : kBlockTeamChunkBytes) / static_cast<int>(sizeof(T));
  static constexpr int kLanes = 16 / static_cast<int>(sizeof(T));  // one 16-byte vector
  static constexpr int kTile = kTeam * kOutputs;
  static constexpr int kTeamsPerBlock = kBlock / kTeam;
  // A padding vector after each thread's outputs where they span an even number of vectors.
  static constexpr bool kPadded = kOutputs / kLanes % 2 == 0;
  // Buffers a team: a tile's samples arrive in one while the previous tile is computed from
  // another. Warp teams keep a third, from which the tile before leaves by a bulk store.
  static constexpr int kBuffers = kTeam == 32 ? 3 : 2;
  static_assert(kOutputs % kChunk == 0 && kChunk % kLanes == 0, "chunks of whole vectors");
};

// A thread's samples form a ring of segments of kChunk samples, one more than its outputs span,
// and one more again when the row's samples start inside a vector (shift > 0).
template <class T, int kShift, int kTeam>
__host__ __device__ constexpr int RingSegments() {
  using Tune = FirTuning<T, kTeam>;
  return Tune::kOutputs / Tune::kChunk + 1 + (kShift > 0 ? 1 : 0);
}

// Samples staged per tile, from the vector boundary at or before the tile's first sample: what
// the last thread's ring reads past its outputs, whole vectors.
template <class T, int kTeam>
__host__ __device__ constexpr int StagedSamples(int taps) {
  using Tune = FirTuning<T, kTeam>;
  constexpr int kRing = (Tune::kOutputs / Tune::kChunk + 2) * Tune::kChunk;
  return (Tune::kTile - Tune::kOutputs + taps + kRing + Tune::kLanes - 1) / Tune::kLanes *
         Tune::kLanes;
}

// Shared-memory index of staged sample e, and of staged vector k: in padded layouts one vector of
// padding after every kOutputs samples, so that the 16-byte loads of a quarter warp (threads
// kOutputs samples apart) hit distinct banks.
template <class T, int kTeam>
__host__ __device__ constexpr int Padded(int e) {
  using Tune = FirTuning<T, kTeam>;
  return Tune::kPadded ? e + e / Tune::kOutputs * Tune::kLanes : e;
}
template <class T, int kTeam>
__host__ __device__ constexpr int PaddedVector(int k) {
  using Tune = FirTuning<T, kTeam>;
  return Tune::kPadded ? k + k / (Tune::kOutputs / Tune::kLanes) : k;
}
template <class T, int kTeam>
__host__ __device__ constexpr int BufferElements(int taps) {
  return Padded<T, kTeam>(StagedSamples<T, kTeam>(taps)) + FirTuning<T>::kLanes;
}
// Whether data of type In is staged through a landing buffer (16-bit data, computed in float).
template <class In>
constexpr bool kLanded = !std::is_same<In, ComputeTypeOf<In>>::value;
// The elements of a team's landing buffer: a tile's samples of In, shifted by up to 7 (StageSpan).
template <class In, int kTeam>
__host__ __device__ constexpr int LandingElements(int taps) {
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

// Tiles are walked as (row, column) pairs, stepping without a 64-bit division per tile.
template <class Tune>
struct TileWalk {
  std::int64_t tiles_per_row, row_step, column_step;
  __device__ __forceinline__ explicit TileWalk(std::int64_t outputs) {
    tiles_per_row = (outputs + Tune::kTile - 1) / Tune::kTile;
    const std::int64_t teams = static_cast<std::int64_t>(gridDim.x) * Tune::kTeamsPerBlock;
    row_step = teams / tiles_per_row;
    column_step = teams % tiles_per_row;
  }
  __device__ __forceinline__ void Advance(std::int64_t* row, std::int64_t* column) const {
    *row += row_step;
    *column += column_step;
    if (*column >= tiles_per_row) {
      *column -= tiles_per_row;
      ++*row;
    }
  }
};

// One thread's outputs and its samples. The outputs start at staged sample `first` (thread * R);
// output r meets samples first + kShift + r + j for taps j. Registers hold a ring of S segments of
// K samples: the chunk of taps c .. c + K - 1 reads segments c / K .. c / K + S - 1 (mod S), then
// the segment c / K takes the samples S * K further on, which a later chunk needs (each kernel
// refills it its own way).
template <class T, class Tune, int kShift, int S>
struct ThreadOutputs {
  static constexpr int R = Tune::kOutputs;
  static constexpr int K = Tune::kChunk;
  T acc[R];
  T ring[S][K];

  __device__ __forceinline__ ThreadOutputs() {
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = T(0);
  }
  // Taps first_tap .. first_tap + K - 1 against the ring at segment s.
  template <class Taps>
  __device__ __forceinline__ void ApplyChunk(const Taps& taps, int first_tap, int s) {
#pragma unroll
    for (int jj = 0; jj < K; ++jj) {
      const T tap = taps[first_tap + jj];
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int o = r + jj + kShift;
        acc[r] = fma(ring[(s + o / K) % S][o % K], tap, acc[r]);
      }
    }
  }
  // Fewer than K taps left from c, against a ring loaded afresh from c: each tap guarded.
  template <class Taps>
  __device__ __forceinline__ void ApplyLastTaps(const Taps& taps, int c, int tap_count) {
#pragma unroll
    for (int jj = 0; jj < K - 1; ++jj) {
      if (c + jj < tap_count) {
        const T tap = taps[c + jj];
#pragma unroll
        for (int r = 0; r < R; ++r) {
          const int o = r + jj + kShift;
          acc[r] = fma(ring[o / K][o % K], tap, acc[r]);
        }
      }
    }
  }
  // The outputs into the thread's place in the staging buffer, as 16-byte vectors.
  __device__ __forceinline__ void StoreToShared(T* thread_samples) const {
    using V = typename Vector16<T>::type;
    constexpr int L = Tune::kLanes;
#pragma unroll
    for (int q = 0; q < R / L; ++q) {
      V v;
      T* lanes = reinterpret_cast<T*>(&v);
#pragma unroll
      for (int l = 0; l < L; ++l) lanes[l] = acc[q * L + l];
      reinterpret_cast<V*>(thread_samples)[q] = v;
    }
  }
};

// The outputs of a tile from vector `from_vector` on, one at a time (a tile's tail, or outputs
// that do not start on 16-byte boundaries).
template <class T, int kTeam, class Out>
__device__ __forceinline__ void StoreOutputs(const T* staged, Out* tile_y, int from_output,
                                             int tile_outputs, unsigned thread) {
  for (int e = from_output + thread; e < tile_outputs; e += kTeam) {
    tile_y[e] = FromCompute<Out>(staged[Padded<T, kTeam>(e)]);
  }
}

// A team's landed samples (StageSpan of `count` samples from row_x[first]) into its float
// buffer at Padded(e), converted (ToCompute): 4 a load and a 16-byte store where the landing
// buffer's shift leaves them 8-byte aligned (rows of whole 16-byte vectors), else one at a time.
template <class T, int kTeam, class In>
__device__ __forceinline__ void LandSamples(T* staged, const In* landing, const In* row_x,
                                            std::int64_t first, int count, unsigned thread) {
  const int shift = SpanShift(row_x, first);
  const In* const from = landing + shift;
  if (shift % 4 == 0) {
    for (int v = thread; v < count / 4; v += kTeam) {
      const uint2 w = *reinterpret_cast<const uint2*>(from + 4 * v);
      const float2 lower = WidenWord<In>(w.x), upper = WidenWord<In>(w.y);
      const float4 f = make_float4(lower.x, lower.y, upper.x, upper.y);
      *reinterpret_cast<float4*>(staged + Padded<T, kTeam>(4 * v)) = f;
    }
    for (int e = count / 4 * 4 + thread; e < count; e += kTeam) {
      staged[Padded<T, kTeam>(e)] = ToCompute<T>(from[e]);
    }
    return;
  }
  for (int e = thread; e < count; e += kTeam) staged[Padded<T, kTeam>(e)] = ToCompute<T>(from[e]);
}

// A tile's outputs from the team's float buffer (at Padded(e)) to 16-bit data, rounded
// (FromCompute): 8 a 16-byte store where `vectors` (tile_y 16-byte aligned), the rest one at a
// time.
template <class T, int kTeam, class In>
__device__ __forceinline__ void StoreNarrowOutputs(const T* staged, In* tile_y, int tile_outputs,
                                                   unsigned thread, bool vectors) {
  int done = 0;
  if (vectors) {
    const int chunks = tile_outputs / 8;
    for (int c = thread; c < chunks; c += kTeam) {
      const float4 lower = reinterpret_cast<const float4*>(staged)[PaddedVector<T, kTeam>(2 * c)];
      const float4 upper =
          reinterpret_cast<const float4*>(staged)[PaddedVector<T, kTeam>(2 * c + 1)];
      *reinterpret_cast<uint4*>(tile_y + 8 * c) = NarrowChunk<In>(lower, upper);
    }
    done = chunks * 8;
  }
  StoreOutputs<T, kTeam>(staged, tile_y, done, tile_outputs, thread);
}

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
  constexpr int K = Tune::kChunk;
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

  const TileWalk<Tune> walk(outputs);
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
  std::int64_t row = team / walk.tiles_per_row, column = team % walk.tiles_per_row;
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
    auto load = [&](T(&segment)[K], unsigned offset) {  // offset: samples past first, whole chunks
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
    // chunk is guarded against the taps left from the turn's start and, unpadded, refills the ring
    // from the turn's shared address with constant offsets.
    const int whole_chunk_taps = tap_count / K * K;
    for (int turn = 0; turn < whole_chunk_taps; turn += S * K) {
      // This turn's and later turns' taps; from a shuffle the compiler knows it the same in every
      // thread and spares each chunk's guard a divergence barrier.
      const int turn_taps = __shfl_sync(~0u, whole_chunk_taps - turn, 0);
      const unsigned turn_address =
          HeldAddress(thread_samples_address + turn * static_cast<unsigned>(sizeof(T)));
#pragma unroll
      for (int s = 0; s < S; ++s) {
        if (s * K < turn_taps) {
          out.ApplyChunk(taps, turn + s * K, s);
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
    const int c = whole_chunk_taps;
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

// Applies taps [0, tap_count) of `taps` to a thread's outputs from its staged samples
// (thread_samples: its first), a block team's inner loop: for a whole filter (FirBlockTeamKernel)
// or one chunk of a long one (FirChunkedKernel). A whole turn of the ring per iteration, so that
// every segment index is a constant; the taps are counted chunk by chunk, which ran faster for
// block teams.
template <class T, class Tune, int kShift, int S, class Taps>
__device__ __forceinline__ void ApplyStagedTaps(ThreadOutputs<T, Tune, kShift, S>& out,
                                                const Taps& taps, const T* thread_samples,
                                                int tap_count) {
  using V = typename Vector16<T>::type;
  constexpr int R = Tune::kOutputs;
  constexpr int K = Tune::kChunk;
  constexpr int L = Tune::kLanes;
  auto load = [&](T(&segment)[K], unsigned offset) {  // offset: samples past first, whole chunks
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
  const int last_full_chunk = tap_count - K;
  while (c <= last_full_chunk) {
#pragma unroll
    for (int s = 0; s < S; ++s) {
      if (c <= last_full_chunk) {
        out.ApplyChunk(taps, c, s);
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

  const TileWalk<Tune> walk(outputs);
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

  std::int64_t row = blockIdx.x / walk.tiles_per_row, column = blockIdx.x % walk.tiles_per_row;
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
  constexpr int K = Tune::kChunk;
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

  const TileWalk<Tune> walk(outputs);
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

  std::int64_t row = blockIdx.x / walk.tiles_per_row, column = blockIdx.x % walk.tiles_per_row;
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
