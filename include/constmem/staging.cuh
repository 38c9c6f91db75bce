// Reusable pinned staging for uploads from pageable host memory. A buffer is handed out again only
// after the copy that read it has executed, which is learned from an event with cudaEventQuery:
// the host never waits. When every buffer is still in flight the pool grows.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <deque>
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
    const Status copied = CudaStatus(
        cudaMemcpyAsync(destination, buffer->host, bytes, cudaMemcpyHostToDevice, stream),
        "cudaMemcpyAsync from pinned staging");
    if (!copied.ok()) {
      std::lock_guard<std::mutex> lock(mutex_);
      free_.push_back(buffer);  // nothing was enqueued that reads it
      return copied;
    }
    const Status recorded =
        CudaStatus(cudaEventRecord(buffer->copied, stream), "cudaEventRecord(staging)");
    std::lock_guard<std::mutex> lock(mutex_);
    // Without its event nothing says when the copy has read the buffer: retire it for good.
    if (recorded.ok()) in_flight_.push_back(buffer);
    return recorded;
  }

  std::size_t buffer_count() {
    std::lock_guard<std::mutex> lock(mutex_);
    return buffers_.size();
  }

 private:
  struct Buffer {
    void* host = nullptr;
    std::size_t bytes = 0;
    cudaEvent_t copied = nullptr;  // recorded after the copy that reads the buffer
  };

  // Copies finish roughly in submission order, so only the oldest in-flight buffers are polled
  // (cudaEventQuery, never a wait): O(1) per call however many copies are queued.
  Status Reserve(std::size_t bytes, Buffer** out) {
    std::lock_guard<std::mutex> lock(mutex_);
    while (!in_flight_.empty()) {
      Buffer* oldest = in_flight_.front();
      const cudaError_t query = cudaEventQuery(oldest->copied);
      if (query == cudaErrorNotReady) break;
      if (query != cudaSuccess) return CudaStatus(query, "cudaEventQuery(staging)");
      in_flight_.pop_front();
      free_.push_back(oldest);
    }
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if ((*it)->bytes >= bytes) {
        *out = *it;
        free_.erase(it);
        return Status::Ok();
      }
    }
    auto buffer = std::make_unique<Buffer>();
    buffer->bytes = std::max(bytes, kMinBufferBytes);
    CONSTMEM_RETURN_IF_CUDA_ERROR(
        cudaHostAlloc(&buffer->host, buffer->bytes, cudaHostAllocPortable),
        "cudaHostAlloc(staging)");
    Status status = CudaStatus(cudaEventCreateWithFlags(&buffer->copied, cudaEventDisableTiming),
                               "cudaEventCreate(staging)");
    if (!status.ok()) {
      cudaFreeHost(buffer->host);
      return status;
    }
    *out = buffer.get();
    buffers_.push_back(std::move(buffer));
    return Status::Ok();
  }

  std::mutex mutex_;
  std::vector<std::unique_ptr<Buffer>> buffers_;  // owns every buffer
  std::deque<Buffer*> in_flight_;                 // oldest copy first
  std::vector<Buffer*> free_;                     // a buffer here is reserved by nobody
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
