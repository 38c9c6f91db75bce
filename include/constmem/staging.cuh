// SPDX-License-Identifier: Apache-2.0
// Reusable pinned staging for uploads from pageable host memory. A buffer is handed out again only
// after the copy that read it has executed, which is learned from an event with cudaEventQuery:
// the host never waits. When every buffer is still in flight the pool grows, up to a bound; what a
// burst pinned is given back once it has stayed idle.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "constmem/cuda_support.cuh"
#include "constmem/stats.hpp"
#include "constmem/strategy.hpp"

// Private to each library that compiles it (visibility.hpp).
#pragma GCC visibility push(hidden)
namespace constmem {

class PinnedStagingPool {
 public:
  static constexpr std::size_t kMinBufferBytes = 64 * 1024;
  // Past this many buffers, or while buffers are being freed, an upload does not pin more memory:
  // it copies from the pageable source directly, which the driver stages itself (the host may
  // wait for that one copy).
  static constexpr std::size_t kMaxBuffers = 16;
  // Idle buffers kept for the next uploads however long they wait; more than this are freed once
  // they have been idle for idle_release().
  static constexpr std::size_t kKeptIdleBuffers = 2;

  PinnedStagingPool() = default;
  PinnedStagingPool(const PinnedStagingPool&) = delete;
  PinnedStagingPool& operator=(const PinnedStagingPool&) = delete;

  // Copies `bytes` from pageable `source` into a pinned buffer and enqueues the copy from there to
  // device address `destination` on `stream`, whose device must be current.
  Status CopyToDevice(void* destination, const void* source, std::size_t bytes,
                      cudaStream_t stream) {
    Buffer* buffer = nullptr;
    CONSTMEM_RETURN_IF_ERROR(Reserve(bytes, &buffer));
    if (buffer == nullptr) {
      Count(Counter::kStagingPageableFallback);
      return CudaStatus(
          CONSTMEM_CUDA_CALL(kMemcpyAsync, cudaMemcpyAsync(destination, source, bytes,
                                                           cudaMemcpyHostToDevice, stream)),
          "cudaMemcpyAsync from pageable memory (staging pool full)");
    }
    std::memcpy(buffer->host, source, bytes);
    const Status copied = CudaStatus(
        CONSTMEM_CUDA_CALL(kMemcpyAsync, cudaMemcpyAsync(destination, buffer->host, bytes,
                                                         cudaMemcpyHostToDevice, stream)),
        "cudaMemcpyAsync from pinned staging");
    if (!copied.ok()) {
      std::lock_guard<std::mutex> lock(mutex_);
      buffer->idle_since = std::chrono::steady_clock::now();
      free_.push_back(buffer);  // nothing was enqueued that reads it
      return copied;
    }
    const Status recorded =
        CudaStatus(CONSTMEM_CUDA_CALL(kEventRecord, cudaEventRecord(buffer->copied, stream)),
                   "cudaEventRecord(staging)");
    Owned retired;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (recorded.ok()) {
        in_flight_.push_back(buffer);
      } else {
        // Without its event nothing says when the copy has read the buffer: it is never handed
        // out again, and freed where freeing waits for the device (FreeElsewhere), after the copy.
        retired.push_back(TakeOwnership(buffer));
      }
    }
    (void)FreeElsewhere(std::move(retired));  // on failure kept and freed with the next
    return recorded;
  }

  // The pinned buffers the pool holds, those waiting to be freed included.
  std::size_t buffer_count() {
    std::lock_guard<std::mutex> lock(mutex_);
    return buffers_.size() + unfreed_.size();
  }

  // Frees every buffer no copy is known to be reading now (uploads pin new ones as they need them),
  // without waiting: for a process that has finished its uploads from pageable memory. An error
  // where no thread could start to free them: they stay in the pool, to be freed later.
  Status ReleaseIdleBuffers() {
    Owned released;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto it = in_flight_.begin(); it != in_flight_.end();) {
        if (cudaEventQuery((*it)->copied) != cudaSuccess) {
          ++it;
          continue;
        }
        free_.push_back(*it);
        it = in_flight_.erase(it);
      }
      for (Buffer* idle : free_) released.push_back(TakeOwnership(idle));
      free_.clear();
    }
    return FreeElsewhere(std::move(released));
  }

  // Threads still freeing buffers (see FreeElsewhere).
  int frees_pending() const { return frees_pending_.load(std::memory_order_acquire); }

  std::chrono::steady_clock::duration idle_release() {
    std::lock_guard<std::mutex> lock(mutex_);
    return idle_release_;
  }
  void set_idle_release(std::chrono::steady_clock::duration idle) {
    std::lock_guard<std::mutex> lock(mutex_);
    idle_release_ = idle;
  }

 private:
  struct Buffer {
    void* host = nullptr;
    std::size_t bytes = 0;
    cudaEvent_t copied = nullptr;  // recorded after the copy that reads the buffer
    std::chrono::steady_clock::time_point idle_since;
  };
  using Owned = std::vector<std::unique_ptr<Buffer>>;

  // cudaFreeHost waits until the device has run everything enqueued before it, and meanwhile
  // cudaHostAlloc waits in every thread (docs/design.md). So buffers are freed
  // on a thread of their own, and while a free is pending Reserve pins nothing new: the upload
  // copies from pageable memory instead. The stream that noticed the buffers idle never waits.
  // Where no thread can start (std::system_error), the buffers are kept (unfreed_, still counted
  // against kMaxBuffers) and go with the next free; the error is a Status, never an exception.
  Status FreeElsewhere(Owned buffers) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto& kept : unfreed_) buffers.push_back(std::move(kept));
      unfreed_.clear();
    }
    if (buffers.empty()) return Status::Ok();
    frees_pending_.fetch_add(1, std::memory_order_acq_rel);
    // Shared, so that the buffers outlive a thread that failed to start.
    auto owned = std::make_shared<Owned>(std::move(buffers));
    auto free_all = [this, owned] {
      for (const auto& buffer : *owned) {
        cudaEventDestroy(buffer->copied);
        cudaFreeHost(buffer->host);
        Count(Counter::kStagingBufferFreed);
      }
      owned->clear();
      frees_pending_.fetch_sub(1,
                               std::memory_order_acq_rel);  // the pool lives as long as the process
    };
#ifdef CONSTMEM_TEST_FREE_IN_CALLER  // the protection off, to show the tests of it fail
    free_all();
#else
    try {
      if (CONSTMEM_FAULT_DUE(kThreadStart)) {
        throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again));
      }
      std::thread(free_all).detach();
    } catch (const std::system_error& e) {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto& kept : *owned) unfreed_.push_back(std::move(kept));
      owned->clear();
      frees_pending_.fetch_sub(1, std::memory_order_acq_rel);
      return Status(StatusCode::kResourceExhausted,
                    std::string("no thread to free pinned staging buffers: ") + e.what());
    }
#endif
    return Status::Ok();
  }

  // Under the lock: takes out of the pool the free buffers past kKeptIdleBuffers (the least
  // recently used first) that have been idle for idle_release_.
  Owned TakeLongIdle(std::chrono::steady_clock::time_point now) {
    Owned released;
    while (free_.size() > kKeptIdleBuffers) {
      const auto oldest = std::min_element(
          free_.begin(), free_.end(),
          [](const Buffer* a, const Buffer* b) { return a->idle_since < b->idle_since; });
      if (now - (*oldest)->idle_since < idle_release_) break;
      released.push_back(TakeOwnership(*oldest));
      free_.erase(oldest);
    }
    return released;
  }

  std::unique_ptr<Buffer> TakeOwnership(Buffer* buffer) {
    const auto owner = std::find_if(buffers_.begin(), buffers_.end(),
                                    [&](const auto& b) { return b.get() == buffer; });
    std::unique_ptr<Buffer> owned = std::move(*owner);
    buffers_.erase(owner);
    return owned;
  }

  // Every in-flight buffer is polled (cudaEventQuery, never a wait), not only the oldest: copies
  // on different streams finish in any order, and one slow stream must not make the others pin
  // new memory. Sets *out to nullptr when the pool is full and nothing is free.
  Status Reserve(std::size_t bytes, Buffer** out) {
    *out = nullptr;
    Owned long_idle;
    bool full = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const auto now = std::chrono::steady_clock::now();
      for (auto it = in_flight_.begin(); it != in_flight_.end();) {
        const cudaError_t query = cudaEventQuery((*it)->copied);
        if (query == cudaErrorNotReady) {
          ++it;
          continue;
        }
        if (query != cudaSuccess) return CudaStatus(query, "cudaEventQuery(staging)");
        (*it)->idle_since = now;
        free_.push_back(*it);
        it = in_flight_.erase(it);
      }
      // The most recently used buffer that fits: the others age towards release.
      Buffer* fit = nullptr;
      for (Buffer* buffer : free_) {
        if (buffer->bytes >= bytes && (fit == nullptr || buffer->idle_since > fit->idle_since)) {
          fit = buffer;
        }
      }
      if (fit != nullptr) free_.erase(std::find(free_.begin(), free_.end(), fit));
      long_idle = TakeLongIdle(now);
      if (fit != nullptr) {
        *out = fit;
      } else if (buffers_.size() + unfreed_.size() + allocating_ < kMaxBuffers &&
                 frees_pending() == 0) {
        ++allocating_;
      } else {
        full = true;
      }
    }
    // Buffers no thread could free stay in unfreed_: the upload goes on.
    (void)FreeElsewhere(std::move(long_idle));
    if (*out != nullptr || full) return Status::Ok();
    // Pinning memory takes milliseconds: never under the lock other streams need.
    auto buffer = std::make_unique<Buffer>();
    buffer->bytes = std::max(bytes, kMinBufferBytes);
    Status status = CudaStatus(
        CONSTMEM_CUDA_CALL(kHostAlloc,
                           cudaHostAlloc(&buffer->host, buffer->bytes, cudaHostAllocPortable)),
        "cudaHostAlloc(staging)");
    if (status.ok()) {
      status = CudaStatus(cudaEventCreateWithFlags(&buffer->copied, cudaEventDisableTiming),
                          "cudaEventCreate(staging)");
      if (!status.ok()) cudaFreeHost(buffer->host);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    --allocating_;
    if (!status.ok()) return status;
    *out = buffer.get();
    buffers_.push_back(std::move(buffer));
    return Status::Ok();
  }

  std::mutex mutex_;
  std::vector<std::unique_ptr<Buffer>> buffers_;  // owns every buffer
  std::vector<Buffer*> in_flight_;                // copies enqueued, not yet known to have run
  std::vector<Buffer*> free_;                     // a buffer here is reserved by nobody
  Owned unfreed_;  // taken out of the pool, to be freed by the next FreeElsewhere
  std::size_t allocating_ = 0;
  std::atomic<int> frees_pending_{0};
  std::chrono::steady_clock::duration idle_release_ = std::chrono::seconds(10);
};

// One pool per device, created on first use and kept for the life of the process.
inline Status StagingPoolFor(int device, PinnedStagingPool** pool) {
  return detail::PerDevice(device, pool, [] { return new PinnedStagingPool(); });
}

// Enqueues the copy of `bytes` of a table from `source` (device, pinned or pageable host memory,
// as `kind` says) to device address `destination` on `stream`, whose device must be current:
// pageable bytes go through the device's staging pool, so the host never waits for the copy.
inline Status CopyTableToDevice(void* destination, const void* source, std::size_t bytes,
                                SourceKind kind, cudaStream_t stream) {
  switch (kind) {
    case SourceKind::kDevice:
      Count(Counter::kUploadFromDevice);
      return CudaStatus(
          CONSTMEM_CUDA_CALL(kMemcpyAsync, cudaMemcpyAsync(destination, source, bytes,
                                                           cudaMemcpyDeviceToDevice, stream)),
          "cudaMemcpyAsync of a table (device source)");
    case SourceKind::kPinnedHost:
      Count(Counter::kUploadFromPinnedHost);
      return CudaStatus(
          CONSTMEM_CUDA_CALL(kMemcpyAsync, cudaMemcpyAsync(destination, source, bytes,
                                                           cudaMemcpyHostToDevice, stream)),
          "cudaMemcpyAsync of a table (pinned host source)");
    case SourceKind::kPageableHost:
      break;
  }
  Count(Counter::kUploadFromPageableHost);
  int device = 0;
  PinnedStagingPool* pool = nullptr;
  CONSTMEM_RETURN_IF_ERROR(StreamDevice(stream, &device));
  CONSTMEM_RETURN_IF_ERROR(StagingPoolFor(device, &pool));
  return pool->CopyToDevice(destination, source, bytes, stream);
}

}  // namespace constmem
#pragma GCC visibility pop
