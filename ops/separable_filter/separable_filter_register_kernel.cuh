// SPDX-License-Identifier: Apache-2.0
// SeparableFilter's register kernel (SeparableRegisterKernel) for short square filters, with no
// CUDA runtime call: rows in registers and the halo from the lanes beside, no tile in shared
// memory as the fused kernel (separable_filter_tile_kernel.cuh) stages. Its constants, the shapes
// it takes (RegisterChannels) and the split of its work (PlanRegisterStrips) are
// separable_filter_plan.h's; separable_filter_gpu.cu launches it for each k and channel count
// (WithRegisterKernel), and tests run it on the CPU through constmem/testing/emulated_gpu.hpp.
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
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "constmem/async_copy.cuh"
#include "separable_filter/separable_filter_device.cuh"
#include "separable_filter/separable_filter_plan.h"

namespace constmem {
namespace ops {
namespace separable_kernels {

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
