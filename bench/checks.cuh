// SPDX-License-Identifier: Apache-2.0
// Benchmarks stop at the first failed call: a figure measured after an error would mean nothing.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "constmem/status.hpp"

#define CHECK_CUDA(expr)                                                      \
  do {                                                                        \
    const cudaError_t e_ = (expr);                                            \
    if (e_ != cudaSuccess) {                                                  \
      std::fprintf(stderr, "%s failed: %s\n", #expr, cudaGetErrorString(e_)); \
      std::exit(1);                                                           \
    }                                                                         \
  } while (0)

#define CHECK_OK(expr)                                                       \
  do {                                                                       \
    const ::constmem::Status s_ = (expr);                                    \
    if (!s_.ok()) {                                                          \
      std::fprintf(stderr, "%s failed: %s\n", #expr, s_.ToString().c_str()); \
      std::exit(1);                                                          \
    }                                                                        \
  } while (0)

// True when a CUDA GPU is visible; otherwise says so for `program`. Without one the benchmarks
// measure nothing and exit 0, so that CI can build and smoke-run them.
inline bool HasGpuOrSayNone(const char* program) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0) return true;
  cudaGetLastError();
  std::printf("%s: no CUDA GPU here; nothing to measure\n", program);
  return false;
}
