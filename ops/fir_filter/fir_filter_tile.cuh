// SPDX-License-Identifier: Apache-2.0
// The device helpers FirFilter's CUDA kernels share, with no CUDA runtime call: a thread's outputs
// and ring of samples (ThreadOutputs), and the ways a tile's samples come in and its outputs go
// out through shared memory. fir_filter_warp_kernel.cuh and fir_filter_block_kernels.cuh hold the
// kernels, fir_filter_plan.h the tiles' arithmetic they index shared memory by;
// fir_filter_gpu.cu launches them, and tests run them on the CPU through
// constmem/testing/emulated_gpu.hpp.
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
// coalesced stores. Filters of more than kFirTiledMaxTaps taps (FirChunkedKernel) run through the
// block teams' tiles one chunk of kFirTiledMaxTaps taps at a time.
//
// float16 and bfloat16 data (kLanded) are computed in float, with float's tiles and registers: a
// tile's 16-bit samples land in a buffer of their own by 16-byte asynchronous copies (whatever the
// row's alignment), are converted once into the team's float buffer (LandSamples), and the outputs
// leave rounded to nearest even (FromCompute), 8 a 16-byte store (StoreNarrowOutputs); one float
// buffer a team, no bulk copies. The FMAs are float32's, in the same order, so the results are the
// CPU kernel's bit for bit.
#pragma once

#include <cstdint>

#include "constmem/async_copy.cuh"
#include "constmem/numeric.hpp"
#include "constmem/tile_staging.cuh"
#include "fir_filter/fir_filter_plan.h"

namespace constmem {
namespace ops {
namespace fir_kernels {

// One thread's outputs and its samples. The outputs start at staged sample `first` (thread * R);
// output r meets samples first + kShift + r + j for taps j. Registers hold a ring of S segments of
// K samples: the taps c .. c + K - 1 read segments c / K .. c / K + S - 1 (mod S), then the
// segment c / K takes the samples S * K further on, which later taps need (each kernel refills it
// its own way).
template <class T, class Tune, int kShift, int S>
struct ThreadOutputs {
  static constexpr int R = Tune::kOutputs;
  static constexpr int K = Tune::kTapsPerSegment;
  T acc[R];
  T ring[S][K];

  __device__ __forceinline__ ThreadOutputs() {
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = T(0);
  }
  // Taps first_tap .. first_tap + K - 1 against the ring at segment s.
  template <class Taps>
  __device__ __forceinline__ void ApplySegment(const Taps& taps, int first_tap, int s) {
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

// The outputs of a tile from output `from_output` on, one at a time (a tile's tail, or outputs
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

}  // namespace fir_kernels
}  // namespace ops
}  // namespace constmem
