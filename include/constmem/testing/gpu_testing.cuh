// SPDX-License-Identifier: Apache-2.0
// Helpers for tests and benchmarks of code built on constmem: whether a GPU is present, a copy to
// the device that has landed when it returns, and kernels' view of wall-clock time for spins that
// hold a stream.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

// Private to each library that compiles it (constmem/visibility.hpp).
#pragma GCC visibility push(hidden)
namespace constmem {
namespace testing {

inline bool HasGpu() {
  int count = 0;
  const bool ok = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  cudaGetLastError();  // "no device" must not leak into the next call
  return ok;
}

// Copies `bytes` from host memory to the device and waits for them to land: a copy from pageable
// memory may still be in flight when cudaMemcpy returns, and launches on streams created
// non-blocking do not wait for the default stream.
inline cudaError_t CopyToDevice(void* device, const void* host, std::size_t bytes) {
  const cudaError_t error = cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice);
  return error != cudaSuccess ? error : cudaDeviceSynchronize();
}

// The GPU's global nanosecond timer, comparable across SMs.
__device__ __forceinline__ unsigned long long GlobalTimerNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ void SpinFor(long long nanoseconds) {
  const unsigned long long start = GlobalTimerNs();
  while (GlobalTimerNs() - start < static_cast<unsigned long long>(nanoseconds)) {
  }
}

}  // namespace testing
}  // namespace constmem
#pragma GCC visibility pop
