// SPDX-License-Identifier: Apache-2.0
#include "bench_common.cuh"

static __constant__ std::int32_t raw_symbol[bench::kRawSymbolEntries];

namespace bench {
namespace {
struct RawReader {
  __device__ std::int32_t operator[](int i) const { return raw_symbol[i]; }
};
}  // namespace

cudaError_t RawUploadAndLaunch(cudaStream_t stream, const std::int32_t* source, int n,
                               cudaMemcpyKind kind, long long* out) {
  const cudaError_t copied =
      cudaMemcpyToSymbolAsync(raw_symbol, source, n * sizeof(std::int32_t), 0, kind, stream);
  if (copied != cudaSuccess) return copied;
  Consume<<<1, 32, 0, stream>>>(RawReader{}, n, out);
  return cudaGetLastError();
}

}  // namespace bench
