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
