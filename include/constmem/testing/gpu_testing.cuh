// SPDX-License-Identifier: Apache-2.0
// Helpers for tests and benchmarks of code built on constmem: whether a GPU is present, and
// kernels' view of wall-clock time for spins that hold a stream.
#pragma once

#include <cuda_runtime.h>

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
