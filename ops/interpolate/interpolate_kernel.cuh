// SPDX-License-Identifier: Apache-2.0
// Interpolate's CUDA kernel, with no CUDA runtime call (interpolate_gpu.cu launches it; tests run
// it on the CPU through constmem/testing/emulated_gpu.hpp). One body serves every reader of the
// knots: StageTable first copies a staged table (whole, or its first entries) into the block's
// shared memory and returns the reader to use.
#pragma once

#include <cstdint>

#include "constmem/async_copy.cuh"
#include "constmem/numeric.hpp"
#include "constmem/shared_table.cuh"
#include "interpolate/interpolate_functor.h"

namespace constmem {
namespace ops {
namespace interpolate_kernels {

// 16-byte vectors each thread has in flight: enough loads to cover memory latency with the few
// blocks a large staged table leaves room for.
constexpr int kVectorsPerThread = 4;

// The 16-byte vector one access of data In moves: float4, double2, or 8 16-bit floats as a uint4.
template <class In>
struct DataVector {
  using type = typename Vector16<In>::type;
};
template <>
struct DataVector<Float16> {
  using type = uint4;
};
template <>
struct DataVector<BFloat16> {
  using type = uint4;
};

// In: the data's type; T: the type it is computed in, the knots' and the grid's.
template <class In, class T, class Table, bool kVectorized, int kBlockThreads>
__global__ void __launch_bounds__(kBlockThreads)
    InterpolateKernel(const In* x, In* y, std::int64_t count, InterpolateGrid<T> grid,
                      const __grid_constant__ Table table) {
  const auto& knots = StageTable(table, grid.last + 1, DynamicSharedMemory());
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  std::int64_t done = 0;
  if (kVectorized) {
    using V = typename DataVector<In>::type;
    constexpr int kLanes = static_cast<int>(sizeof(V) / sizeof(In));
    const std::int64_t vectors = count / kLanes;
    const V* in = reinterpret_cast<const V*>(x);
    V* out = reinterpret_cast<V*>(y);
    std::int64_t i = first;
    // `y` may be `x` (a framework's forwarded buffer): each vector is read before it is written.
    for (; i + (kVectorsPerThread - 1) * stride < vectors; i += kVectorsPerThread * stride) {
      V v[kVectorsPerThread];
#pragma unroll
      for (int k = 0; k < kVectorsPerThread; ++k) v[k] = in[i + k * stride];
#pragma unroll
      for (int k = 0; k < kVectorsPerThread; ++k) {
        In* lanes = reinterpret_cast<In*>(&v[k]);
#pragma unroll
        for (int l = 0; l < kLanes; ++l) lanes[l] = InterpolateData(lanes[l], knots, grid);
        out[i + k * stride] = v[k];
      }
    }
    for (; i < vectors; i += stride) {
      V v = in[i];
      In* lanes = reinterpret_cast<In*>(&v);
#pragma unroll
      for (int l = 0; l < kLanes; ++l) lanes[l] = InterpolateData(lanes[l], knots, grid);
      out[i] = v;
    }
    done = vectors * kLanes;
  }
  for (std::int64_t i = done + first; i < count; i += stride) {
    y[i] = InterpolateData(x[i], knots, grid);
  }
}

}  // namespace interpolate_kernels
}  // namespace ops
}  // namespace constmem
