// SPDX-License-Identifier: Apache-2.0
// Staging a kernel's tiles: spans of a row into shared memory and back, for elements of any width
// (1 to 16 bytes) with the row's ends read as zeros, and the conversions of 16-bit data to and from
// float a 32-bit word at a time. The stencil ops' kernels (FirFilter, Upfirdn) stage through these;
// an op author's kernel can too:
//
//   // A block stages samples [first, first + count) of a row, zeros outside [0, length):
//   StageSpan(buffer, row, first, count, length, threadIdx.x, blockDim.x);
//   CopyAsyncCommit();
//   CopyAsyncWaitAll();
//   __syncthreads();
//   // buffer[SpanShift(row, first) + i] holds row[first + i] ...
//
// The layout keeps a row's 16-byte chunks whole in the buffer: element first + i lands at
// to[SpanShift(row, first) + i], so a chunk that lies inside the row is one 16-byte asynchronous
// copy. Compiled with CONSTMEM_EMULATED_GPU by the host compiler, it runs on the CPU.
#pragma once

#include <cstdint>
#include <type_traits>

#include "constmem/async_copy.cuh"
#include "constmem/numeric.hpp"

// Private to each library that compiles it (visibility.hpp).
#pragma GCC visibility push(hidden)
namespace constmem {

// Elements of a staged span whose first element sits `shifted_count - count` elements into its
// first chunk: whole 16-byte chunks.
template <class T>
__host__ __device__ constexpr int SpanElements(int shifted_count) {
  constexpr int kPerChunk = 16 / static_cast<int>(sizeof(T));
  return (shifted_count + kPerChunk - 1) / kPerChunk * kPerChunk;
}
// Where row[first] lies in its 16-byte chunk, in elements.
template <class T>
__host__ __device__ inline int SpanShift(const T* row, std::int64_t first) {
  const std::uintptr_t address =
      reinterpret_cast<std::uintptr_t>(row) + static_cast<std::uintptr_t>(first) * sizeof(T);
  return static_cast<int>(address % 16 / sizeof(T));
}

// Stages elements [first, first + count) of `row`, whose elements outside [0, length) read as
// zeros, into the 16-byte aligned shared buffer `to`: element first + i at
// to[SpanShift(row, first) + i]. A chunk inside the row is one 16-byte asynchronous copy; the
// chunks at the row's ends go element by element, asynchronously with zero fill for elements of 4
// bytes or more (cp.async copies no fewer than 4 bytes) and by plain stores for narrower ones,
// which land before the barrier that precedes the buffer's reads. The threads `thread` of
// `threads` share the chunks (a block, or the lanes of a warp). The elements of the first and last
// chunks outside the span are written too, with the row's values or zeros: `to` holds
// SpanElements<T>(shift + count) elements. The copies belong to the caller's next commit.
template <class T>
__device__ __forceinline__ void StageSpan(T* to, const T* row, std::int64_t first, int count,
                                          std::int64_t length, int thread, int threads) {
  static_assert(16 % sizeof(T) == 0, "elements of 1, 2, 4, 8 or 16 bytes");
  constexpr int kPerChunk = 16 / static_cast<int>(sizeof(T));
  const int shift = SpanShift(row, first);
  const std::int64_t base = first - shift;  // the row element of to[0]
  const int chunks = SpanElements<T>(shift + count) / kPerChunk;
  for (int c = thread; c < chunks; c += threads) {
    const std::int64_t e = base + static_cast<std::int64_t>(c) * kPerChunk;
    T* const chunk = to + c * kPerChunk;
    if (e >= 0 && e + kPerChunk <= length) {
      CopyAsync(reinterpret_cast<int4*>(chunk), reinterpret_cast<const int4*>(row + e), true);
      continue;
    }
#pragma unroll
    for (int i = 0; i < kPerChunk; ++i) {
      const bool inside = e + i >= 0 && e + i < length;
      if constexpr (sizeof(T) >= 4) {
        CopyAsync(chunk + i, inside ? row + e + i : row, inside);
      } else {
        chunk[i] = inside ? row[e + i] : T{0};
      }
    }
  }
}

// 16-bit data in 32-bit words: a word's two elements (the lower one first) as floats, and two
// floats rounded (FromCompute) into a word.
template <class In>
__device__ __forceinline__ float2 WidenWord(unsigned word) {
  static_assert(sizeof(In) == 2, "16-bit elements");
  return make_float2(ToCompute<float>(In{static_cast<std::uint16_t>(word & 0xffffu)}),
                     ToCompute<float>(In{static_cast<std::uint16_t>(word >> 16)}));
}
template <class In>
__device__ __forceinline__ unsigned NarrowWord(float lower, float upper) {
  static_assert(sizeof(In) == 2, "16-bit elements");
  return static_cast<unsigned>(FromCompute<In>(lower).bits) |
         static_cast<unsigned>(FromCompute<In>(upper).bits) << 16;
}
// The 8 elements of a 16-byte chunk of 16-bit data at `from`, as floats.
template <class In>
__device__ __forceinline__ void WidenChunk(const In* from, float (&to)[8]) {
  const uint4 v = *reinterpret_cast<const uint4*>(from);
  const unsigned words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 pair = WidenWord<In>(words[i]);
    to[2 * i] = pair.x;
    to[2 * i + 1] = pair.y;
  }
}
// Eight floats, rounded to 16-bit data, as one 16-byte chunk.
template <class In>
__device__ __forceinline__ uint4 NarrowChunk(const float4& lower, const float4& upper) {
  return make_uint4(NarrowWord<In>(lower.x, lower.y), NarrowWord<In>(lower.z, lower.w),
                    NarrowWord<In>(upper.x, upper.y), NarrowWord<In>(upper.z, upper.w));
}

// The reverse of StageSpan, synchronously: row[0, count) from a 16-byte aligned shared buffer that
// holds row[i] at from[SpanShift(row, 0) + i], one 16-byte store for each chunk of the row that is
// whole, the rest element by element. `from` holds T itself, or floats that FromCompute rounds to
// 16-bit T.
template <class T, class From>
__device__ __forceinline__ void StoreSpan(T* row, const From* from, int count, int thread,
                                          int threads) {
  constexpr bool kNarrowed = !std::is_same<T, From>::value;
  static_assert(!kNarrowed || (std::is_same<From, float>::value && sizeof(T) == 2),
                "T itself, or floats to 16-bit elements");
  constexpr int kPerChunk = 16 / static_cast<int>(sizeof(T));
  const int shift = SpanShift(row, 0);
  const int chunks = SpanElements<T>(shift + count) / kPerChunk;
  for (int c = thread; c < chunks; c += threads) {
    const int e = c * kPerChunk - shift;  // the row element of the chunk's first
    const From* const values = from + c * kPerChunk;
    if (e >= 0 && e + kPerChunk <= count) {
      if constexpr (kNarrowed) {
        const float4 lower = reinterpret_cast<const float4*>(values)[0];
        const float4 upper = reinterpret_cast<const float4*>(values)[1];
        *reinterpret_cast<uint4*>(row + e) = NarrowChunk<T>(lower, upper);
      } else {
        *reinterpret_cast<int4*>(row + e) = *reinterpret_cast<const int4*>(values);
      }
      continue;
    }
#pragma unroll
    for (int i = 0; i < kPerChunk; ++i) {
      if (e + i < 0 || e + i >= count) continue;
      if constexpr (kNarrowed) {
        row[e + i] = FromCompute<T>(values[i]);
      } else {
        row[e + i] = values[i];
      }
    }
  }
}

}  // namespace constmem
#pragma GCC visibility pop
