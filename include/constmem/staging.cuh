// Reusable pinned staging for uploads from pageable host memory. A buffer is handed out again only
// after the copy that read it has executed, which is learned from an event with cudaEventQuery:
// the host never waits. When every buffer is still in flight the pool grows.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "constmem/cuda_support.cuh"

namespace constmem {

class PinnedStagingPool {
 public:
  static constexpr std::size_t kMinBufferBytes = 64 * 1024;

  PinnedStagingPool() = default;
  PinnedStagingPool(const PinnedStagingPool&) = delete;
  PinnedStagingPool& operator=(const PinnedStagingPool&) = delete;
  // Buffers and events live until process exit: freeing pinned memory would synchronise the device.

  // Copies `bytes` from pageable `source` into a pinned buffer and enqueues the copy from there to
  // device address `destination` on `stream`, whose device must be current.
  Status CopyToDevice(void* destination, const void* source, std::size_t bytes,
                      cudaStream_t stream) {
    Buffer* buffer = nullptr;
    CONSTMEM_RETURN_IF_ERROR(Reserve(bytes, &buffer));
    std::memcpy(buffer->host, source, bytes);
    Status status = CudaStatus(
        cudaMemcpyAsync(destination, buffer->host, bytes, cudaMemcpyHostToDevice, stream),
        "cudaMemcpyAsync from pinned staging");
    if (status.ok()) {
      status = CudaStatus(cudaEventRecord(buffer->copied, stream), "cudaEventRecord(staging)");
    }
    std::lock_guard<std::mutex> lock(mutex_);
    buffer->reserved = false;
    buffer->in_flight = status.ok();
    return status;
  }

  std::size_t buffer_count() {
    std::lock_guard<std::mutex> lock(mutex_);
    return buffers_.size();
  }

 private:
  struct Buffer {
    void* host = nullptr;
    std::size_t bytes = 0;
    cudaEvent_t copied = nullptr;
    bool reserved = false;   // a thread is filling it
    bool in_flight = false;  // a copy that reads it may not have run yet
  };

  Status Reserve(std::size_t bytes, Buffer** out) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& buffer : buffers_) {
      if (buffer->reserved || buffer->bytes < bytes) continue;
      if (buffer->in_flight) {
        const cudaError_t query = cudaEventQuery(buffer->copied);
        if (query == cudaErrorNotReady) continue;
        if (query != cudaSuccess) return CudaStatus(query, "cudaEventQuery(staging)");
        buffer->in_flight = false;
      }
      buffer->reserved = true;
      *out = buffer.get();
      return Status::Ok();
    }
    auto buffer = std::make_unique<Buffer>();
    buffer->bytes = std::max(bytes, kMinBufferBytes);
    CONSTMEM_RETURN_IF_CUDA_ERROR(
        cudaHostAlloc(&buffer->host, buffer->bytes, cudaHostAllocPortable), "cudaHostAlloc(staging)");
    Status status = CudaStatus(cudaEventCreateWithFlags(&buffer->copied, cudaEventDisableTiming),
                               "cudaEventCreate(staging)");
    if (!status.ok()) {
      cudaFreeHost(buffer->host);
      return status;
    }
    buffer->reserved = true;
    *out = buffer.get();
    buffers_.push_back(std::move(buffer));
    return Status::Ok();
  }

  std::mutex mutex_;
  std::vector<std::unique_ptr<Buffer>> buffers_;
};

// One pool per device, created on first use and kept for the life of the process.
inline Status StagingPoolFor(int device, PinnedStagingPool** pool) {
  CONSTMEM_RETURN_IF_ERROR(CheckDeviceOrdinal(device));
  static std::array<std::atomic<PinnedStagingPool*>, kMaxDevices> pools{};
  static std::mutex creation_mutex;
  PinnedStagingPool* existing = pools[device].load(std::memory_order_acquire);
  if (existing == nullptr) {
    std::lock_guard<std::mutex> lock(creation_mutex);
    existing = pools[device].load(std::memory_order_relaxed);
    if (existing == nullptr) {
      existing = new PinnedStagingPool();  // intentionally never freed: see the class
      pools[device].store(existing, std::memory_order_release);
    }
  }
  *pool = existing;
  return Status::Ok();
}

}  // namespace constmem
