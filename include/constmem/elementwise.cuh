// SPDX-License-Identifier: Apache-2.0
// clang-format off
// A kernel for the most common table op: every element walks the whole table, in order,
//
//   state = Op::Start(x, table[0]);  for j in 1..n-1: Op::Step(state, table[j]);
//   y = Op::Finish(state)
//
// (a running sum, Horner's rule, a chain of lookups). Every lane of a warp reads table[j] with the
// same j, which is what constant memory broadcasts. An op supplies the three steps and its tuning:
//
//   template <class T>
//   struct PolyvalStep {
//     struct State { T x, y; };
//     static constexpr int kVectorsPerThread = 8;  // 16-byte vectors in flight per thread
//     static constexpr int kTableUnroll = 8;
//     __device__ static State Start(T x, T first) { return {x, first}; }
//     __device__ static void Step(State& s, T entry) { s.y = fma(s.y, s.x, entry); }
//     __device__ static T Finish(const State& s) { return s.y; }
//   };
//
// and launches with LaunchElementwiseTable<PolyvalStep<T>>(device, stream, x, y, n, size, reader)
// from the callable it gives LaunchWithTable (dispatch.cuh).
//
// The steps work in the type Finish returns (the compute type C). The data may be narrower
// (float16 or bfloat16 data computed in float): the kernel reads each element with ToCompute<C>,
// converts each table entry to C, and writes each result with FromCompute (numeric.hpp). For data
// of type C both are no-ops.
// clang-format on
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>
#include <utility>

#include "constmem/cuda_support.cuh"
#include "constmem/dispatch.cuh"
#include "constmem/numeric.hpp"

// Private to each library that compiles it (visibility.hpp).
#pragma GCC visibility push(hidden)
namespace constmem {

constexpr int kElementwiseThreads = 256;

// The type Op computes in: what its Finish returns.
template <class Op>
using ElementwiseComputeOf =
    std::decay_t<decltype(Op::Finish(std::declval<const typename Op::State&>()))>;

// The 16-byte vector one load or store of T moves: Vector16's, or 8 16-bit floats as a uint4.
template <class T>
struct ElementwiseVector {
  using type = typename Vector16<T>::type;
};
template <>
struct ElementwiseVector<Float16> {
  using type = uint4;
};
template <>
struct ElementwiseVector<BFloat16> {
  using type = uint4;
};

// Tiles of kElementwiseThreads x kVectors vectors, visited grid-stride from element `begin`: read
// and written fully coalesced (vector k of every thread is contiguous across the block), so that
// concurrent blocks stream through neighbouring memory. Returns the element after the last tile.
template <class Op, int kVectors, class T, class Table>
__device__ __forceinline__ std::int64_t ElementwiseTiles(const T* data, T* out, std::int64_t begin,
                                                         std::int64_t tiles, int table_size,
                                                         const Table& table) {
  using V = typename ElementwiseVector<T>::type;
  using C = ElementwiseComputeOf<Op>;
  using State = typename Op::State;
  constexpr int kLanes = static_cast<int>(sizeof(V) / sizeof(T));
  constexpr std::int64_t kTileVectors = static_cast<std::int64_t>(kElementwiseThreads) * kVectors;
  const V* in_vectors = reinterpret_cast<const V*>(data + begin);
  V* out_vectors = reinterpret_cast<V*>(out + begin);
  for (std::int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const std::int64_t first = tile * kTileVectors + threadIdx.x;
    State state[kVectors * kLanes];
    const C entry0 = static_cast<C>(table[0]);
#pragma unroll
    for (int k = 0; k < kVectors; ++k) {
      const V v = in_vectors[first + k * kElementwiseThreads];
      const T* lanes = reinterpret_cast<const T*>(&v);
#pragma unroll
      for (int l = 0; l < kLanes; ++l) {
        state[k * kLanes + l] = Op::Start(ToCompute<C>(lanes[l]), entry0);
      }
    }
#pragma unroll Op::kTableUnroll
    for (int j = 1; j < table_size; ++j) {
      const C entry = static_cast<C>(table[j]);
#pragma unroll
      for (int e = 0; e < kVectors * kLanes; ++e) Op::Step(state[e], entry);
    }
#pragma unroll
    for (int k = 0; k < kVectors; ++k) {
      V v;
      T* lanes = reinterpret_cast<T*>(&v);
#pragma unroll
      for (int l = 0; l < kLanes; ++l) lanes[l] = FromCompute<T>(Op::Finish(state[k * kLanes + l]));
      out_vectors[first + k * kElementwiseThreads] = v;
    }
  }
  return begin + tiles * kTileVectors * kLanes;
}

// The elements go in three passes, so that no block idles while others finish: whole waves of
// large tiles (gridDim.x tiles each), then what is left in tiles a quarter that size, then the
// last elements (and all of them, for unaligned pointers) one per thread. `out` may be `data`
// (frameworks forward an input buffer nothing else reads): every element is read before the same
// thread writes it, so the pointers carry no __restrict__.
template <class Op, class T, class Table, bool kVectorized>
__global__ void __launch_bounds__(kElementwiseThreads)
    ElementwiseTableKernel(const T* data, T* out, std::int64_t count, int table_size,
                           const __grid_constant__ Table table) {
  using C = ElementwiseComputeOf<Op>;
  constexpr int kLanes = static_cast<int>(sizeof(typename ElementwiseVector<T>::type) / sizeof(T));
  constexpr int kLarge = Op::kVectorsPerThread;
  constexpr int kSmall = kLarge >= 4 ? kLarge / 4 : 1;
  constexpr std::int64_t kLargeElements =
      static_cast<std::int64_t>(kElementwiseThreads) * kLarge * kLanes;
  constexpr std::int64_t kSmallElements =
      static_cast<std::int64_t>(kElementwiseThreads) * kSmall * kLanes;
  std::int64_t done = 0;
  if (kVectorized) {
    const std::int64_t large = count / kLargeElements / gridDim.x * gridDim.x;
    done = ElementwiseTiles<Op, kLarge>(data, out, 0, large, table_size, table);
    done = ElementwiseTiles<Op, kSmall>(data, out, done, (count - done) / kSmallElements,
                                        table_size, table);
  }
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = done + static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += stride) {
    typename Op::State state = Op::Start(ToCompute<C>(data[i]), static_cast<C>(table[0]));
    for (int j = 1; j < table_size; ++j) Op::Step(state, static_cast<C>(table[j]));
    out[i] = FromCompute<T>(Op::Finish(state));
  }
}

// Enqueues the kernel on `stream` (whose device is `device`, current) with a persistent grid:
// whole tiles when both pointers are 16-byte aligned, one element per thread otherwise.
template <class Op, class T, class Table>
Status LaunchElementwiseTable(int device, cudaStream_t stream, const T* data, T* out,
                              std::int64_t count, int table_size, const Table& table) {
  if (count <= 0) return Status::Ok();
  constexpr int kLanes = static_cast<int>(sizeof(typename ElementwiseVector<T>::type) / sizeof(T));
  constexpr std::int64_t kTileElements =
      static_cast<std::int64_t>(kElementwiseThreads) * Op::kVectorsPerThread * kLanes;
  const bool aligned = reinterpret_cast<std::uintptr_t>(data) % 16 == 0 &&
                       reinterpret_cast<std::uintptr_t>(out) % 16 == 0;
  // Whole tiles, or for small counts one element per thread.
  const std::int64_t wanted = std::max(
      aligned ? count / kTileElements : 0,
      ((aligned ? count % kTileElements : count) + kElementwiseThreads - 1) / kElementwiseThreads);
  int resident = 0;
  if (aligned) {
    constexpr auto kernel = ElementwiseTableKernel<Op, T, Table, true>;
    CONSTMEM_RETURN_IF_ERROR(ResidentBlocks<kernel>(kElementwiseThreads, device, &resident));
    kernel<<<PersistentGrid(wanted, resident), kElementwiseThreads, 0, stream>>>(data, out, count,
                                                                                 table_size, table);
  } else {
    constexpr auto kernel = ElementwiseTableKernel<Op, T, Table, false>;
    CONSTMEM_RETURN_IF_ERROR(ResidentBlocks<kernel>(kElementwiseThreads, device, &resident));
    kernel<<<PersistentGrid(wanted, resident), kElementwiseThreads, 0, stream>>>(data, out, count,
                                                                                 table_size, table);
  }
  return CudaStatus(CONSTMEM_CUDA_CALL(kKernelLaunch, cudaGetLastError()), "kernel launch");
}

}  // namespace constmem
#pragma GCC visibility pop
