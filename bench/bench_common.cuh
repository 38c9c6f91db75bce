// SPDX-License-Identifier: Apache-2.0
// Shared pieces of the upload benchmark: the consumer kernel every variant launches, and the
// interface between the benchmark's translation units (each declares its own __constant__ data).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "constmem/status.hpp"
#include "constmem/strategy.hpp"

namespace bench {

// Reads the first and last entries, warp-uniformly: the launch is what is timed, not the kernel.
template <class Reader>
__global__ void Consume(const __grid_constant__ Reader table, int n, long long* out) {
  if (threadIdx.x == 0) *out = static_cast<long long>(table[0]) + table[n - 1];
}

// raw_symbol.cu: a plain __constant__ array and cudaMemcpyToSymbolAsync, the CUDA floor.
constexpr std::size_t kRawSymbolEntries = 16384;
cudaError_t RawUploadAndLaunch(cudaStream_t stream, const std::int32_t* source, int n,
                               cudaMemcpyKind kind, long long* out);

// constmem_bank.cu: the same through a constmem bank (lease, upload, launch, release); with
// `dedupe`, an unchanged host table is not copied again.
constmem::Status ConstmemUploadAndLaunch(cudaStream_t stream, const std::int32_t* source, int n,
                                         constmem::SourceKind kind, bool dedupe, long long* out);

}  // namespace bench
