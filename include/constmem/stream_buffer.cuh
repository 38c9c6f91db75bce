// SPDX-License-Identifier: Apache-2.0
// Device memory whose life is ordered on a stream, for a table too large for the op's banks (a
// host table that must reach global memory) or a kernel's scratch:
//
//   StreamOrderedBuffer buffer;
//   CONSTMEM_RETURN_IF_ERROR(buffer.Allocate(stream, device, bytes));
//   kernel<<<grid, block, 0, stream>>>(static_cast<float*>(buffer.data()), ...);
//   return buffer.Release();  // the free is enqueued after the kernel: no host wait
//
// Outside a capture the memory comes from a pool constmem keeps per device (CUDA's stream-ordered
// allocator), which keeps up to kKeptBytes between calls so that a steady stream of calls does not
// map memory each time; the pool reuses a block on another stream only after the free's point on
// its stream has passed (CUDA's event dependencies). Under a CUDA graph capture the buffer is one
// the graph owns (capture.cuh, CaptureScratch), not a pair of memory nodes: a graph with memory
// nodes cannot be a child graph of another, as XLA's command buffers make every captured call.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include "constmem/capture.cuh"
#include "constmem/cuda_support.cuh"
#include "constmem/hazard_tracking.hpp"

// Private to each library that compiles it (visibility.hpp).
#pragma GCC visibility push(hidden)
namespace constmem {

namespace detail {

// The memory pool of one device, created on first use and kept for the life of the process.
class DevicePool {
 public:
  // Memory the pool keeps mapped while idle: a few of the largest tables (2^20 float64 entries
  // are 8 MiB).
  static constexpr std::uint64_t kKeptBytes = 64ull << 20;

  static Status Create(int device, DevicePool** out) {
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t pool = nullptr;
    CONSTMEM_RETURN_IF_CUDA_ERROR(cudaMemPoolCreate(&pool, &props), "cudaMemPoolCreate");
    std::uint64_t kept = kKeptBytes;
    CONSTMEM_RETURN_IF_CUDA_ERROR(
        cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &kept),
        "cudaMemPoolSetAttribute(ReleaseThreshold)");
    // A block freed on one stream and not yet past its free there is not handed to another
    // stream behind a wait the allocator inserts: that would order independent streams. The pool
    // maps new memory instead (a block whose free has run is still reused at once).
    int no = 0;
    CONSTMEM_RETURN_IF_CUDA_ERROR(
        cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies, &no),
        "cudaMemPoolSetAttribute(ReuseAllowInternalDependencies)");
    *out = new DevicePool(pool);
    return Status::Ok();
  }
  cudaMemPool_t pool() const { return pool_; }

 private:
  explicit DevicePool(cudaMemPool_t pool) : pool_(pool) {}
  cudaMemPool_t pool_;
};

inline Status DevicePoolFor(int device, DevicePool** out) {
  CONSTMEM_RETURN_IF_ERROR(CheckDeviceOrdinal(device));
  // PerDevice's `make` cannot fail; a failed creation is asked again on the next call.
  static std::array<std::atomic<DevicePool*>, kMaxDevices> pools{};
  static std::mutex creation_mutex;
  DevicePool* existing = pools[device].load(std::memory_order_acquire);
  if (existing == nullptr) {
    std::lock_guard<std::mutex> lock(creation_mutex);
    existing = pools[device].load(std::memory_order_relaxed);
    if (existing == nullptr) {
      CONSTMEM_RETURN_IF_ERROR(DevicePool::Create(device, &existing));
      pools[device].store(existing, std::memory_order_release);
    }
  }
  *out = existing;
  return Status::Ok();
}

}  // namespace detail

class StreamOrderedBuffer {
 public:
  StreamOrderedBuffer() = default;
  StreamOrderedBuffer(const StreamOrderedBuffer&) = delete;
  StreamOrderedBuffer& operator=(const StreamOrderedBuffer&) = delete;
  // An error path that never reached Release still frees the memory after what was enqueued.
  ~StreamOrderedBuffer() { Release(); }

  // `bytes` (at least 1) of device memory on `device`, usable by work enqueued on `stream` after
  // this call. `device` is the stream's, and current.
  Status Allocate(cudaStream_t stream, int device, std::size_t bytes) {
    CONSTMEM_RETURN_IF_ERROR(Release());
    if (bytes == 0) return InvalidArgument("a stream-ordered buffer of 0 bytes");
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    CONSTMEM_RETURN_IF_CUDA_ERROR(cudaStreamIsCapturing(stream, &capture), "cudaStreamIsCapturing");
    if (capture != cudaStreamCaptureStatusNone) {
      CONSTMEM_RETURN_IF_ERROR(detail::CaptureScratch(stream, device, bytes, &data_));
      graph_owned_ = true;
    } else {
      detail::DevicePool* pool = nullptr;
      CONSTMEM_RETURN_IF_ERROR(detail::DevicePoolFor(device, &pool));
      const cudaError_t error = cudaMallocFromPoolAsync(&data_, bytes, pool->pool(), stream);
      if (error != cudaSuccess) {
        data_ = nullptr;
        return CudaStatus(
            error, ("cudaMallocFromPoolAsync of " + std::to_string(bytes) + " bytes").c_str());
      }
    }
    stream_ = stream;
    bytes_ = bytes;
    return Status::Ok();
  }

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }

  // Enqueues the free on the allocation's stream, after everything enqueued there so far.
  Status Release() {
    if (data_ == nullptr) return Status::Ok();
    void* data = data_;
    data_ = nullptr;
    bytes_ = 0;
    if (graph_owned_) {  // the graph frees it
      graph_owned_ = false;
      return Status::Ok();
    }
    // Without hazard tracking (test builds) the free is not ordered after the buffer's readers,
    // so that another stream may take the block while a kernel still reads it: what the ordered
    // free prevents, and the core's tests show.
    const cudaStream_t free_stream = HazardTrackingEnabled() ? stream_ : cudaStreamPerThread;
    return CudaStatus(cudaFreeAsync(data, free_stream), "cudaFreeAsync");
  }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  cudaStream_t stream_ = nullptr;
  bool graph_owned_ = false;
};

}  // namespace constmem
#pragma GCC visibility pop
