// SPDX-License-Identifier: Apache-2.0
// What every C++ GPU test here shares: skipping without a GPU, Status assertions, and owning
// wrappers for streams and device buffers.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "constmem/status.hpp"
#include "constmem/table.hpp"
#include "constmem/testing/gpu_testing.cuh"

#define REQUIRE_GPU() \
  if (!::constmem::testing::HasGpu()) GTEST_SKIP() << "no CUDA GPU here"
#define ASSERT_OK(expr)                    \
  do {                                     \
    const ::constmem::Status s_ = (expr);  \
    ASSERT_TRUE(s_.ok()) << s_.ToString(); \
  } while (0)
#define EXPECT_OK(expr)                    \
  do {                                     \
    const ::constmem::Status s_ = (expr);  \
    EXPECT_TRUE(s_.ok()) << s_.ToString(); \
  } while (0)
#define ASSERT_CUDA(expr) ASSERT_EQ((expr), cudaSuccess)

namespace constmem {
namespace testing {

// Set by scripts/gpu-core.sh around the compute-sanitizer runs, which shrink sizes and serialise
// work across streams (so a test cannot count on one stream overtaking another there).
inline bool UnderSanitizer() { return std::getenv("CONSTMEM_SANITIZER_RUN") != nullptr; }

// `child` as the one node of a new graph, instantiated: how XLA's command buffers run a captured
// call. The caller destroys `*exec` and `*parent`.
inline cudaError_t InstantiateAsChildGraph(cudaGraph_t child, cudaGraph_t* parent,
                                           cudaGraphExec_t* exec) {
  cudaError_t error = cudaGraphCreate(parent, 0);
  cudaGraphNode_t node = nullptr;
  if (error == cudaSuccess) error = cudaGraphAddChildGraphNode(&node, *parent, nullptr, 0, child);
  if (error == cudaSuccess) error = cudaGraphInstantiate(exec, *parent, 0);
  return error;
}

class Stream {
 public:
  Stream() { cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking); }
  ~Stream() { cudaStreamDestroy(stream_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  operator cudaStream_t() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t n) : n_(n) {
    cudaMalloc(&data_, n * sizeof(T));
    cudaMemset(data_, 0, n * sizeof(T));  // initialised, so that initcheck sees only real misses
    // Done before any non-blocking stream (which does not wait for the default stream) uses it.
    cudaDeviceSynchronize();
  }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T* get() const { return data_; }
  std::vector<T> Read() const {
    std::vector<T> host(n_);
    cudaMemcpy(host.data(), data_, n_ * sizeof(T), cudaMemcpyDeviceToHost);
    return host;
  }

 private:
  T* data_ = nullptr;
  std::size_t n_;
};

// A table in each of the forms a launcher can get it: pageable host, pinned host, device.
template <class T>
struct Tables {
  explicit Tables(const std::vector<T>& values) : host(values), device(values.size()) {
    cudaHostAlloc(&pinned, values.size() * sizeof(T), cudaHostAllocDefault);
    std::memcpy(pinned, values.data(), values.size() * sizeof(T));
    CopyToDevice(device.get(), values.data(), values.size() * sizeof(T));
  }
  ~Tables() { cudaFreeHost(pinned); }
  TableView<T> View(SourceKind source) const {
    const auto n = static_cast<std::int64_t>(host.size());
    switch (source) {
      case SourceKind::kPageableHost:
        return {host.data(), n, source, /*repeats=*/true};
      case SourceKind::kPinnedHost:
        return {pinned, n, source};
      default:
        return {device.get(), n, source};
    }
  }
  std::vector<T> host;
  T* pinned = nullptr;
  DeviceBuffer<T> device;
};

}  // namespace testing
}  // namespace constmem
