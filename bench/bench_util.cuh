// SPDX-License-Identifier: Apache-2.0
// What the GPU kernel benchmarks share: timing with CUDA events, the ceiling kernels every figure
// is measured against, random data and a small JSON writer.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "checks.cuh"

namespace {

constexpr int kRepetitions = 5;

// Median milliseconds of kRepetitions timed runs after one warm-up, with CUDA events.
double MedianMs(cudaStream_t stream, const std::function<void()>& run) {
  run();
  CHECK_CUDA(cudaStreamSynchronize(stream));
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  std::vector<double> ms;
  for (int r = 0; r < kRepetitions; ++r) {
    CHECK_CUDA(cudaEventRecord(start, stream));
    run();
    CHECK_CUDA(cudaEventRecord(stop, stream));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float elapsed = 0;
    CHECK_CUDA(cudaEventElapsedTime(&elapsed, start, stop));
    ms.push_back(elapsed);
  }
  CHECK_CUDA(cudaGetLastError());
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// Pure adds: 8 independent chains per thread, so the adder pipes are the limit.
template <class T>
__global__ void AddCeilingKernel(T* out, T step, int iterations) {
  T a[8];
#pragma unroll
  for (int k = 0; k < 8; ++k) a[k] = static_cast<T>(threadIdx.x + k);
#pragma unroll 8
  for (int i = 0; i < iterations; ++i) {  // unrolled: loop overhead would count against the adds
#pragma unroll
    for (int k = 0; k < 8; ++k) a[k] = a[k] + step;
  }
  T sum = 0;
#pragma unroll
  for (int k = 0; k < 8; ++k) sum += a[k];
  if (sum == static_cast<T>(-1.2345)) out[0] = sum;  // keeps the chains alive
}

template <class T>
__global__ void ElementwiseKernel(const T* __restrict__ in, T* __restrict__ out, std::int64_t n,
                                  T s) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = in[i] + s;
  }
}

template <class T>
__global__ void FillRandomKernel(T* out, std::int64_t n, unsigned seed) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    unsigned x = static_cast<unsigned>(i) * 2654435761u ^ seed;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    out[i] = static_cast<T>(static_cast<int>(x % 2000001u) - 1000000) * static_cast<T>(1e-3);
  }
}

struct Json {
  std::string text = "{";
  bool first = true;
  void Add(const std::string& key, const std::string& raw_value) {
    text += (first ? "\n \"" : ",\n \"") + key + "\": " + raw_value;
    first = false;
  }
};

std::string Num(double v) {
  char b[64];
  std::snprintf(b, sizeof(b), "%.6g", v);
  return b;
}

}  // namespace
