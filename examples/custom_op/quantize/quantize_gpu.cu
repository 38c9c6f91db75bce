// SPDX-License-Identifier: Apache-2.0
// Quantize's CUDA kernels, two passes over x: one warp a quantization block reduces its absmax
// (each lane a strided share of the block, then shuffles), then one thread a byte writes its two
// codes from its elements' blocks' absmax (a byte may straddle two blocks where `block` is odd).
// Each block of the second kernel sorts the 16-entry codebook into shared memory once; the
// codebook reaches it by value, from a constant bank, or read in place from device memory.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "constmem/constmem.cuh"
#include "constmem/dispatch.cuh"
#include "quantize/quantize_functor.h"
#include "quantize/quantize_launcher.h"

// LaunchWithTable's bank: the codebook is read once a block (kPerBlock), never from it.
CONSTMEM_DEFINE_BANK(quantize_codebook, float, 16, 1);

namespace example {
namespace {

using CodebookByValue = constmem::ByValueTable<float, 16>;
constexpr int kThreads = 256;
constexpr int kWarpSize = 32;

template <class T>
__global__ void QuantizeAbsmaxKernel(const T* x, float* absmax, QuantizeShape shape,
                                     std::int64_t blocks) {
  const int lane = threadIdx.x % kWarpSize;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * (kThreads / kWarpSize);
  for (std::int64_t b =
           (static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x) / kWarpSize;
       b < blocks; b += warps) {
    const std::int64_t first = b * shape.block;
    const std::int64_t last =
        first + shape.block < shape.elements ? first + shape.block : shape.elements;
    float m = 0.0f;
    for (std::int64_t i = first + lane; i < last; i += kWarpSize) {
      m = AbsMax(m, constmem::ToCompute<float>(x[i]));
    }
#pragma unroll
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
      m = AbsMax(m, __shfl_xor_sync(0xffffffffu, m, offset));
    }
    if (lane == 0) absmax[b] = StoredAbsmax(m, last == first + shape.block);
  }
}

template <class T, class Codebook>
__global__ void QuantizeCodesKernel(const T* x, std::uint8_t* codes, const float* absmax,
                                    QuantizeShape shape,
                                    const __grid_constant__ Codebook codebook) {
  __shared__ QuantizeLevels levels;
  if (threadIdx.x == 0) {
    float entries[16];
    for (int i = 0; i < 16; ++i) entries[i] = codebook[i];
    levels = SortCodebook(entries);
  }
  __syncthreads();
  const QuantizeLevels local = levels;
  const std::int64_t bytes = shape.elements / 2;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * kThreads;
  for (std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x; k < bytes;
       k += stride) {
    codes[k] = QuantizeByte(x, k, absmax, shape.elements, shape.block, local);
  }
}

unsigned GridFor(std::int64_t threads) {
  return static_cast<unsigned>(
      std::min<std::int64_t>((threads + kThreads - 1) / kThreads, std::int64_t{1} << 20));
}

}  // namespace

constmem::Placement QuantizePlacement(std::int64_t count, constmem::SourceKind source) {
  constmem::StrategyLimits limits;
  limits.by_value_bytes = CodebookByValue::kCapacity * sizeof(float);
  return constmem::ChoosePlacementFor<float>(count, source, limits,
                                             constmem::TableAccess::kPerBlock);
}

template <class T>
constmem::Status LaunchQuantize(constmem::GpuStream stream, const T* x, std::uint8_t* codes,
                                float* absmax, const QuantizeShape& shape,
                                const constmem::TableView<float>& codebook) {
  if (codebook.size != 16) return constmem::InvalidArgument("Quantize needs 16 codebook entries");
  if (shape.elements == 0) return constmem::Status::Ok();
  const std::int64_t blocks = (shape.elements + shape.block - 1) / shape.block;
  QuantizeAbsmaxKernel<T>
      <<<GridFor(blocks * kWarpSize), kThreads, 0, stream>>>(x, absmax, shape, blocks);
  CONSTMEM_RETURN_IF_ERROR(constmem::CudaStatus(cudaGetLastError(), "Quantize absmax launch"));
  return constmem::LaunchWithTable<CodebookByValue, quantize_codebook_bank>(
      stream, codebook, QuantizePlacement(codebook.size, codebook.source),
      [&](int, const auto& reader) {
        using Codebook = std::decay_t<decltype(reader)>;
        QuantizeCodesKernel<T, Codebook>
            <<<GridFor(shape.elements / 2), kThreads, 0, stream>>>(x, codes, absmax, shape, reader);
        return constmem::CudaStatus(cudaGetLastError(), "Quantize codes launch");
      });
}

template constmem::Status LaunchQuantize<float>(constmem::GpuStream, const float*, std::uint8_t*,
                                                float*, const QuantizeShape&,
                                                const constmem::TableView<float>&);
template constmem::Status LaunchQuantize<constmem::Float16>(constmem::GpuStream,
                                                            const constmem::Float16*, std::uint8_t*,
                                                            float*, const QuantizeShape&,
                                                            const constmem::TableView<float>&);
template constmem::Status LaunchQuantize<constmem::BFloat16>(constmem::GpuStream,
                                                             const constmem::BFloat16*,
                                                             std::uint8_t*, float*,
                                                             const QuantizeShape&,
                                                             const constmem::TableView<float>&);

}  // namespace example
