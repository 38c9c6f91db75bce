// SPDX-License-Identifier: Apache-2.0
// Dequantize's CUDA kernel. A thread takes four bytes of codes (eight outputs) at a time: one
// 4-byte load and, where y is aligned, one 16-byte store of 16-bit outputs (two of float32). Each
// block copies the 16-entry codebook into shared memory once, where lanes look it up at their
// codes' indices; the absmax of each block of outputs is read where it lies
// (TableAccess::kPerBlock: the eight outputs of a thread share one entry, a warp reads a few
// neighbouring ones), by value from a host table that fits a kernel parameter.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "constmem/constmem.cuh"
#include "constmem/dispatch.cuh"
#include "constmem/shared_table.cuh"
#include "dequantize/dequantize_functor.h"
#include "dequantize/dequantize_launcher.h"

// LaunchWithTable's banks. Neither constant bank is chosen (kPerBlock); the global bank takes host
// absmax tables too large to go by value (larger ones go through a stream-ordered buffer).
CONSTMEM_DEFINE_BANK(dequantize_codebook, float, 16, 1);
CONSTMEM_DEFINE_BANK(dequantize_absmax, float, 16, 1);
CONSTMEM_DEFINE_GLOBAL_BANK(dequantize_global_absmax, float, 16384, 2);

namespace example {
namespace {

using CodebookByValue = constmem::ByValueTable<float, 16>;
using AbsmaxByValue = constmem::DefaultByValueTable<float>;
constexpr int kThreads = 256;
constexpr int kBytesPerThread = 4;

// 16-byte stores of eight outputs where y and the codes are aligned; elementwise otherwise.
template <class Out, bool kAligned, class Codebook, class Absmax>
__global__ void DequantizeKernel(const std::uint8_t* codes, Out* y, DequantizeShape shape,
                                 bool uniform_scale, const __grid_constant__ Codebook codebook,
                                 const __grid_constant__ Absmax absmax) {
  __shared__ float table[16];
  if (threadIdx.x < 16) table[threadIdx.x] = codebook[threadIdx.x];
  __syncthreads();
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * kThreads * kBytesPerThread;
  for (std::int64_t first =
           (static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x) * kBytesPerThread;
       first < shape.bytes; first += stride) {
    const std::int64_t out = 2 * first;
    if (kAligned && first + kBytesPerThread <= shape.bytes) {
      const std::uint32_t word = *reinterpret_cast<const std::uint32_t*>(codes + first);
      // The eight outputs share a block where the block size is a multiple of eight.
      const float shared_scale = uniform_scale ? absmax[out / shape.block] : 0.0f;
      alignas(16) Out values[2 * kBytesPerThread];
#pragma unroll
      for (int j = 0; j < 2 * kBytesPerThread; ++j) {
        const int byte = (word >> (8 * (j >> 1))) & 0xff;
        const int code = (j & 1) ? (byte & 0x0f) : (byte >> 4);
        const float scale = uniform_scale ? shared_scale : absmax[(out + j) / shape.block];
        values[j] = constmem::FromCompute<Out>(table[code] * scale);
      }
      const uint4* from = reinterpret_cast<const uint4*>(values);
      uint4* to = reinterpret_cast<uint4*>(y + out);
#pragma unroll
      for (int v = 0; v < static_cast<int>(sizeof(values) / sizeof(uint4)); ++v) to[v] = from[v];
    } else {
      const std::int64_t last = first + kBytesPerThread;
      const std::int64_t end = 2 * (last < shape.bytes ? last : shape.bytes);
      for (std::int64_t i = out; i < end; ++i) {
        y[i] = constmem::FromCompute<Out>(DequantizeOutput(codes, i, table, absmax, shape.block));
      }
    }
  }
}

}  // namespace

constmem::Placement DequantizePlacement(int /*table*/, std::int64_t count,
                                        constmem::SourceKind source) {
  // The codebook is read once a block, the absmax once a run of outputs: both kPerBlock.
  constmem::StrategyLimits limits;
  limits.by_value_bytes = AbsmaxByValue::kCapacity * sizeof(float);
  return constmem::ChoosePlacementFor<float>(count, source, limits,
                                             constmem::TableAccess::kPerBlock);
}

template <class Out>
constmem::Status LaunchDequantize(constmem::GpuStream stream, const std::uint8_t* codes, Out* y,
                                  const DequantizeShape& shape,
                                  const constmem::TableView<float>& codebook,
                                  const constmem::TableView<float>& absmax) {
  if (codebook.size != 16) return constmem::InvalidArgument("Dequantize needs 16 codebook entries");
  if (shape.bytes == 0) return constmem::Status::Ok();
  const bool aligned = reinterpret_cast<std::uintptr_t>(codes) % 4 == 0 &&
                       reinterpret_cast<std::uintptr_t>(y) % 16 == 0;
  const bool uniform_scale = shape.block % (2 * kBytesPerThread) == 0;
  const std::int64_t threads = (shape.bytes + kBytesPerThread - 1) / kBytesPerThread;
  const auto blocks = static_cast<unsigned>(
      std::min<std::int64_t>((threads + kThreads - 1) / kThreads, std::int64_t{1} << 20));
  return constmem::LaunchWithTable<CodebookByValue, dequantize_codebook_bank>(
      stream, codebook, DequantizePlacement(kCodebook, codebook.size, codebook.source),
      [&](int, const auto& codebook_reader) {
        return constmem::LaunchWithTable<AbsmaxByValue, dequantize_absmax_bank,
                                         dequantize_global_absmax_bank>(
            stream, absmax, DequantizePlacement(kAbsmax, absmax.size, absmax.source),
            [&](int, const auto& absmax_reader) {
              using Codebook = std::decay_t<decltype(codebook_reader)>;
              using Absmax = std::decay_t<decltype(absmax_reader)>;
              if constexpr (constmem::IsSharedTableSource<Absmax>::value) {
                return constmem::InvalidArgument("absmax is never staged in shared memory");
              } else {
                if (aligned) {
                  DequantizeKernel<Out, true, Codebook, Absmax><<<blocks, kThreads, 0, stream>>>(
                      codes, y, shape, uniform_scale, codebook_reader, absmax_reader);
                } else {
                  DequantizeKernel<Out, false, Codebook, Absmax><<<blocks, kThreads, 0, stream>>>(
                      codes, y, shape, uniform_scale, codebook_reader, absmax_reader);
                }
                return constmem::CudaStatus(cudaGetLastError(), "Dequantize launch");
              }
            });
      });
}

template constmem::Status LaunchDequantize<constmem::BFloat16>(
    constmem::GpuStream, const std::uint8_t*, constmem::BFloat16*, const DequantizeShape&,
    const constmem::TableView<float>&, const constmem::TableView<float>&);
template constmem::Status LaunchDequantize<constmem::Float16>(
    constmem::GpuStream, const std::uint8_t*, constmem::Float16*, const DequantizeShape&,
    const constmem::TableView<float>&, const constmem::TableView<float>&);
template constmem::Status LaunchDequantize<float>(constmem::GpuStream, const std::uint8_t*, float*,
                                                  const DequantizeShape&,
                                                  const constmem::TableView<float>&,
                                                  const constmem::TableView<float>&);

}  // namespace example
