// SPDX-License-Identifier: Apache-2.0
// CausalConv1d's arithmetic, once for the CPU loop and the CUDA kernel: the same fused
// multiply-adds in the same order, so that both give the same bits.
#pragma once

#include <cmath>
#include <cstdint>

#include "constmem/host_device.hpp"

namespace example {

// y[t] of one channel's row: bias + sum_j weight[j] * x[t - (k - 1) + j] over the taps j whose
// sample is inside the row (the samples before its start are zeros), j in increasing order.
// `weight` is anything indexable (a pointer, or a constmem table reader) holding the channel's k
// taps from `first`.
template <class Weight>
CONSTMEM_HOST_DEVICE float CausalConvOutput(const float* x, std::int64_t t, const Weight& weight,
                                            std::int64_t first, std::int64_t k, float bias) {
  float acc = bias;
  const std::int64_t start = k - 1 - t > 0 ? k - 1 - t : 0;  // taps that read before the row
  for (std::int64_t j = start; j < k; ++j) {
#if defined(__CUDA_ARCH__)
    acc = fmaf(weight[first + j], x[t - (k - 1) + j], acc);
#else
    acc = std::fma(weight[first + j], x[t - (k - 1) + j], acc);
#endif
  }
  return acc;
}

}  // namespace example
