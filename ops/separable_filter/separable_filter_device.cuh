// SPDX-License-Identifier: Apache-2.0
// The device helpers SeparableFilter's fused kernel and two passes share, with no CUDA runtime
// call: a thread's outputs computed from a ring of samples in registers (Slide, over Lanes of one
// element or of a vector), and the row and column taps read through one reader or two
// (RowAndColumnTaps, RowTaps, ColumnTaps; the register kernel reads its taps through them too).
// separable_filter_plan.h holds the arithmetic they are sized by (kTapsPerRingSegment,
// RingSegments).
//
// Every kernel computes in ComputeTypeOf<In> (float for float16, bfloat16 and uint8), reads an
// element with ToCompute and writes one with FromCompute, and applies each tap as one FMA in tap
// order from +0: the CPU kernel's operations, so that the results agree bit for bit.
#pragma once

#include "constmem/async_copy.cuh"
#include "separable_filter/separable_filter_plan.h"

namespace constmem {
namespace ops {
namespace separable_kernels {

// N values of one sample: one element, or N consecutive ones (the fused kernel's column pass:
// kColumnLanes; the register kernel: a lane's vector). Aligned for one vector load or store (two
// for four doubles).
template <class T, int N>
struct alignas(sizeof(T) * N < 16 ? sizeof(T) * N : 16) Lanes {
  T v[N];
};

// acc[r] = sum_j fma(load(r + j), taps[first_tap + j], acc[r]) for j = 0 .. count-1, in order. A
// ring of S = RingSegments<R>() segments of K = kTapsPerRingSegment samples in registers: the
// chunk of taps c .. c + K - 1 reads segments s .. s + S - 1 (mod S), then segment s takes the
// samples S * K further on. A whole turn of the ring an iteration keeps every register index a
// constant. `load` is called for samples up to count + S * K - 1 and must stay in bounds there
// (their values are unused).
template <int R, class T, int N, class Taps, class Load>
__device__ __forceinline__ void Slide(Lanes<T, N> (&acc)[R], const Taps& taps, int first_tap,
                                      int count, const Load& load) {
  constexpr int K = kTapsPerRingSegment;
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

}  // namespace separable_kernels
}  // namespace ops
}  // namespace constmem
