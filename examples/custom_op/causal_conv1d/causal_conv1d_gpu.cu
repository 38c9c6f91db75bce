// SPDX-License-Identifier: Apache-2.0
// CausalConv1d's CUDA kernel. Each of its two tables is placed by its own size and source: a
// nested constmem::LaunchWithTable per table hands the kernel one reader each (by value, a slot of
// the table's constant bank, or global memory). A block computes consecutive outputs of one row,
// so every lane of a warp reads the same weight and bias entries: what constant memory broadcasts.
#include <cuda_runtime.h>

#include <algorithm>
#include <type_traits>

#include "causal_conv1d/causal_conv1d_functor.h"
#include "causal_conv1d/causal_conv1d_launcher.h"
#include "constmem/constmem.cuh"
#include "constmem/dispatch.cuh"

// Both banks of this file share its 64 KiB of __constant__ space: 32 KiB of weights (two slots of
// 4,096 taps) and 16 KiB of biases (four slots of 1,024 channels).
CONSTMEM_DEFINE_BANK(causal_weight, float, 4096, 2);
CONSTMEM_DEFINE_BANK(causal_bias, float, 1024, 4);

namespace example {
namespace {

// By value: up to 1,024 taps and 256 biases, 5 KiB of kernel parameters together.
using WeightByValue = constmem::ByValueTable<float, 1024>;
using BiasByValue = constmem::ByValueTable<float, 256>;
constexpr int kThreads = 256;
constexpr std::int64_t kMaxGridRows = 65535;

template <class Weight, class Bias>
__global__ void CausalConv1dKernel(const float* x, float* y, CausalConvShape shape,
                                   const __grid_constant__ Weight weight,
                                   const __grid_constant__ Bias bias) {
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  for (std::int64_t r = blockIdx.y; r < shape.rows; r += gridDim.y) {
    const int c = static_cast<int>(r % shape.channels);
    const float b = bias[c];  // read by every lane, inside the row or not: warp-uniform
    if (t < shape.length) {
      y[r * shape.length + t] =
          CausalConvOutput(x + r * shape.length, t, weight, c * shape.taps, shape.taps, b);
    }
  }
}

}  // namespace

constmem::Placement CausalConv1dPlacement(int table, std::int64_t count,
                                          constmem::SourceKind source) {
  constmem::StrategyLimits limits;
  // The entries each by-value table and each bank slot holds.
  if (table == kWeight) {
    limits.by_value_bytes = WeightByValue::kCapacity * sizeof(float);
    limits.constant_bank_bytes = causal_weight_bank::kBytes / 2;
  } else {
    limits.by_value_bytes = BiasByValue::kCapacity * sizeof(float);
    limits.constant_bank_bytes = causal_bias_bank::kBytes / 4;
  }
  return constmem::ChoosePlacementFor<float>(count, source, limits);
}

constmem::Status LaunchCausalConv1d(constmem::GpuStream stream, const float* x, float* y,
                                    const CausalConvShape& shape,
                                    const constmem::TableView<float>& weight,
                                    const constmem::TableView<float>& bias) {
  if (weight.size != shape.channels * shape.taps || bias.size != shape.channels) {
    return constmem::InvalidArgument("CausalConv1d needs channels * taps weights and a bias each");
  }
  if (shape.rows == 0 || shape.length == 0) return constmem::Status::Ok();
  const dim3 grid(static_cast<unsigned>((shape.length + kThreads - 1) / kThreads),
                  static_cast<unsigned>(std::min(shape.rows, kMaxGridRows)));
  // The weight's launch places it and calls the bias's, which places the bias and launches the
  // kernel with both readers; each lease is released after the kernel is enqueued.
  return constmem::LaunchWithTable<WeightByValue, causal_weight_bank>(
      stream, weight, CausalConv1dPlacement(kWeight, weight.size, weight.source),
      [&](int, const auto& weight_reader) {
        return constmem::LaunchWithTable<BiasByValue, causal_bias_bank>(
            stream, bias, CausalConv1dPlacement(kBias, bias.size, bias.source),
            [&](int, const auto& bias_reader) {
              using Weight = std::decay_t<decltype(weight_reader)>;
              using Bias = std::decay_t<decltype(bias_reader)>;
              CausalConv1dKernel<Weight, Bias>
                  <<<grid, kThreads, 0, stream>>>(x, y, shape, weight_reader, bias_reader);
              return constmem::CudaStatus(cudaGetLastError(), "CausalConv1d launch");
            });
      });
}

}  // namespace example
