// SPDX-License-Identifier: Apache-2.0
// Upfirdn's direct CUDA kernel, for the shapes the tiled kernel (upfirdn_tiled_kernel.cuh) cannot
// take: those whose smallest tile does not fit shared memory (HaloTerms, upfirdn_plan.h) and those
// whose indices pass int, all in int64 here. float16 and bfloat16 samples are converted to float as
// they are read; the results are the CPU kernel's bit for bit.
#pragma once

#include <cstdint>

#include "constmem/async_copy.cuh"
#include "constmem/numeric.hpp"
#include "constmem/shared_table.cuh"
#include "upfirdn/upfirdn_plan.h"

namespace constmem {
namespace ops {
namespace upfirdn_kernels {

// The direct kernel's shape, all in int64.
struct DirectGeometry {
  std::int64_t rows, length, outputs, taps, up, down;
};

// One output a thread, over a grid-stride loop: UpfirdnOutput (upfirdn_functor.h) as it is written,
// the samples read from global memory, the taps from wherever `taps` reads them (staged in shared
// memory for that placement).
template <class In, class Taps>
__global__ void __launch_bounds__(kThreads)
    UpfirdnDirectKernel(const In* __restrict__ x, In* __restrict__ y, const DirectGeometry g,
                        const __grid_constant__ Taps taps) {
  using T = ComputeTypeOf<In>;
  unsigned char* const shared_bytes = DynamicSharedMemory();
  const auto& h = StageTable(taps, static_cast<int>(g.taps), shared_bytes);
  const std::int64_t total = g.rows * g.outputs;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t w = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; w < total;
       w += stride) {
    const std::int64_t row = w / g.outputs, i = w - row * g.outputs;
    const std::int64_t t = i * g.down;
    const std::int64_t p = t % g.up, b = t / g.up;
    T acc = T(0);
    if (p < g.taps) {
      const std::int64_t last_m = (g.taps - 1 - p) / g.up;
      const std::int64_t lo = b - g.length + 1 > 0 ? b - g.length + 1 : 0;
      const std::int64_t hi = b < last_m ? b : last_m;
      std::int64_t sample = row * g.length + b - lo;  // x[b - m] of this row
      std::int64_t tap = p + lo * g.up;               // h[p + m * up]
      for (std::int64_t m = lo; m <= hi; ++m, --sample, tap += g.up) {
        acc = fma(ToCompute<T>(x[sample]), h[static_cast<int>(tap)], acc);
      }
    }
    y[w] = FromCompute<In>(acc);
  }
}

}  // namespace upfirdn_kernels
}  // namespace ops
}  // namespace constmem
