// SPDX-License-Identifier: Apache-2.0
// Uses the whole core from CUDA code: a bank, a lease and a kernel that reads the slot.
#include <cuda_runtime.h>

#include "constmem/constmem.cuh"

CONSTMEM_DEFINE_BANK(gains, float, 256, 2);

__global__ void ApplyGains(gains_reader table, int n, float* data) {
  float total = 0.f;
  for (int j = 0; j < n; ++j) total += table[j];
  data[blockIdx.x * blockDim.x + threadIdx.x] *= total;
}

constmem::Status Apply(cudaStream_t stream, const float* host_gains, int n, float* data,
                       int count) {
  constmem::Lease<float> lease;
  CONSTMEM_RETURN_IF_ERROR(gains().Acquire(stream, n, host_gains, &lease));
  CONSTMEM_RETURN_IF_ERROR(lease.UploadFromPageableHost(host_gains, n));
  ApplyGains<<<count / 128, 128, 0, stream>>>(gains_reader{lease.offset()}, n, data);
  CONSTMEM_RETURN_IF_ERROR(constmem::CudaStatus(cudaGetLastError(), "ApplyGains launch"));
  return lease.Release();
}
