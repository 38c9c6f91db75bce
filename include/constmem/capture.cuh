// SPDX-License-Identifier: Apache-2.0
// Tables of launches captured into CUDA graphs (stream capture: torch.cuda.graph, XLA command
// buffers, cudaStreamBeginCapture of one's own).
//
// A graph replays what was captured, later, any number of times, possibly while other graphs and
// eager work run on other streams, and an executable is ordered only against its own earlier
// launches. So a captured launch must not depend on anything the host does at replay time, and
// must not share storage whose contents another replay or an eager call could change:
//   - a host table that fits the op's by-value parameter is copied into the kernel node: nothing
//     else exists, and each executable has its own copy;
//   - a device table is read in place from global memory at every replay (its contents at replay
//     time, as every other input of the graph);
//   - a larger host table is copied once, at capture, into a device buffer that the graph owns
//     (a user object), filled on a stream of the core's own, and the graph waits for that copy
//     through an external event wait node; the buffer is read from global memory.
// No bank slot is captured: slots are shared by every stream of the process, and a slot written
// by a replay would be written at times no lease can order (docs/design.md, CUDA graphs).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "constmem/cuda_support.cuh"
#include "constmem/staging.cuh"
#include "constmem/stats.hpp"
#include "constmem/table.hpp"

// Private to each library that compiles it (visibility.hpp).
#pragma GCC visibility push(hidden)
namespace constmem {

// Whether `stream` is capturing a graph now; the one query a capturing stream allows.
inline Status IsCapturing(cudaStream_t stream, bool* capturing) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CONSTMEM_RETURN_IF_CUDA_ERROR(cudaStreamIsCapturing(stream, &capture), "cudaStreamIsCapturing");
  if (capture == cudaStreamCaptureStatusInvalidated) {
    return Status(StatusCode::kFailedPrecondition,
                  "the stream's graph capture has been invalidated by an earlier call");
  }
  *capturing = capture == cudaStreamCaptureStatusActive;
  return Status::Ok();
}

namespace detail {

// The graph a capturing stream records into. CUDA 13 added edge data to the query.
inline Status CaptureGraph(cudaStream_t stream, cudaGraph_t* graph) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
#if CUDART_VERSION >= 13000
  CONSTMEM_RETURN_IF_CUDA_ERROR(
      cudaStreamGetCaptureInfo(stream, &status, nullptr, graph, nullptr, nullptr, nullptr),
      "cudaStreamGetCaptureInfo");
#else
  CONSTMEM_RETURN_IF_CUDA_ERROR(
      cudaStreamGetCaptureInfo_v2(stream, &status, nullptr, graph, nullptr, nullptr),
      "cudaStreamGetCaptureInfo_v2");
#endif
  if (status != cudaStreamCaptureStatusActive) {
    return Status(StatusCode::kFailedPrecondition, "the stream stopped capturing");
  }
  return Status::Ok();
}

// Device buffers for host tables captured into graphs, on one device. Each is owned by the graph
// that captured it through a user object (and thereby by the graph's clones and executables);
// CUDA releases that reference after the last executable is destroyed and its launches have run,
// and the buffer goes back on a free list for the next capture. A user object's destructor may not
// call CUDA, so nothing is freed there.
class GraphTableStore {
 public:
  struct Buffer {
    GraphTableStore* store = nullptr;
    void* device = nullptr;
    std::size_t bytes = 0;
    cudaEvent_t filled = nullptr;  // recorded on the upload stream after the copy into `device`
  };

  explicit GraphTableStore(int device) : device_(device) {}
  GraphTableStore(const GraphTableStore&) = delete;
  GraphTableStore& operator=(const GraphTableStore&) = delete;

  // A buffer of at least `bytes`: the smallest free one, or a new one. The caller runs in relaxed
  // capture mode (cudaMalloc would invalidate a global-mode capture).
  Status Take(std::size_t bytes, Buffer** out) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto fit = free_.end();
      for (auto it = free_.begin(); it != free_.end(); ++it) {
        if ((*it)->bytes >= bytes && (fit == free_.end() || (*it)->bytes < (*fit)->bytes)) fit = it;
      }
      if (fit != free_.end()) {
        *out = *fit;
        free_.erase(fit);
        ++owned_by_graphs_;
        return Status::Ok();
      }
    }
    auto buffer = std::make_unique<Buffer>();
    buffer->store = this;
    buffer->bytes = std::max<std::size_t>(bytes, 256);
    CONSTMEM_RETURN_IF_CUDA_ERROR(cudaMalloc(&buffer->device, buffer->bytes),
                                  "cudaMalloc(captured table)");
    const Status event = CudaStatus(
        cudaEventCreateWithFlags(&buffer->filled, cudaEventDisableTiming), "cudaEventCreate");
    if (!event.ok()) {
      cudaFree(buffer->device);
      return event;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    *out = buffer.get();
    buffers_.push_back(std::move(buffer));
    ++owned_by_graphs_;
    return Status::Ok();
  }

  // Back on the free list: from the user object's destructor, or from a capture that failed before
  // a graph came to own the buffer.
  void Return(Buffer* buffer) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(buffer);
    --owned_by_graphs_;
  }
  static void CUDART_CB Released(void* buffer) {
    auto* owned = static_cast<Buffer*>(buffer);
    owned->store->Return(owned);
  }

  // The stream that fills captured tables: non-blocking, so that it never waits for the legacy
  // default stream, and used for nothing else, so that a copy on it never waits for user work.
  Status UploadStream(cudaStream_t* stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (upload_stream_ == nullptr) {
      CONSTMEM_RETURN_IF_CUDA_ERROR(
          cudaStreamCreateWithFlags(&upload_stream_, cudaStreamNonBlocking),
          "cudaStreamCreate(captured tables)");
    }
    *stream = upload_stream_;
    return Status::Ok();
  }

  // Buffers graphs own now, and buffers waiting on the free list.
  int owned_by_graphs() {
    std::lock_guard<std::mutex> lock(mutex_);
    return owned_by_graphs_;
  }
  int idle() {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<int>(free_.size());
  }
  int device() const { return device_; }

 private:
  int device_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Buffer>> buffers_;  // every buffer, kept for the process's life
  std::vector<Buffer*> free_;
  int owned_by_graphs_ = 0;
  cudaStream_t upload_stream_ = nullptr;
};

inline Status GraphTableStoreFor(int device, GraphTableStore** store) {
  return PerDevice(device, store, [device] { return new GraphTableStore(device); });
}

// Makes the graph capturing on `stream` the owner of `buffer` through a user object: CUDA gives it
// back to the store once the graph's last executable is gone and has run. On failure the buffer is
// back in the store.
inline Status GiveToGraph(cudaStream_t stream, GraphTableStore* store,
                          GraphTableStore::Buffer* buffer) {
  cudaGraph_t graph = nullptr;
  cudaUserObject_t owner = nullptr;
  Status status = CaptureGraph(stream, &graph);
  if (status.ok()) {
    status = CudaStatus(cudaUserObjectCreate(&owner, buffer, &GraphTableStore::Released, 1,
                                             cudaUserObjectNoDestructorSync),
                        "cudaUserObjectCreate");
  }
  if (!status.ok()) {
    store->Return(buffer);
    return status;
  }
  status = CudaStatus(cudaGraphRetainUserObject(graph, owner, 1, cudaGraphUserObjectMove),
                      "cudaGraphRetainUserObject");
  if (!status.ok()) cudaUserObjectRelease(owner, 1);  // returns the buffer
  return status;
}

// Copies a host table into a buffer the graph capturing on `stream` owns, and makes the graph wait
// for that copy. On success the graph holds the only reference to the buffer.
inline Status CaptureHostTable(cudaStream_t stream, int device, const void* values,
                               std::size_t bytes, GraphTableStore::Buffer** out) {
  GraphTableStore* store = nullptr;
  CONSTMEM_RETURN_IF_ERROR(GraphTableStoreFor(device, &store));
  cudaStream_t upload = nullptr;
  CONSTMEM_RETURN_IF_ERROR(store->UploadStream(&upload));
  PinnedStagingPool* staging = nullptr;
  CONSTMEM_RETURN_IF_ERROR(StagingPoolFor(device, &staging));
  GraphTableStore::Buffer* buffer = nullptr;
  CONSTMEM_RETURN_IF_ERROR(store->Take(bytes, &buffer));
  Status status = staging->CopyToDevice(buffer->device, values, bytes, upload);
  if (status.ok()) {
    status = CudaStatus(CONSTMEM_CUDA_CALL(kEventRecord, cudaEventRecord(buffer->filled, upload)),
                        "cudaEventRecord(captured table)");
  }
  if (!status.ok()) {
    // The copy may still be in flight: the next Take of this buffer is ordered after it on the
    // upload stream, which is the only stream that writes it.
    store->Return(buffer);
    return status;
  }
  CONSTMEM_RETURN_IF_ERROR(GiveToGraph(stream, store, buffer));
  CONSTMEM_RETURN_IF_CUDA_ERROR(
      CONSTMEM_CUDA_CALL(kStreamWaitEvent,
                         cudaStreamWaitEvent(stream, buffer->filled, cudaEventWaitExternal)),
      "cudaStreamWaitEvent(captured table)");
  *out = buffer;
  return Status::Ok();
}

// A kernel's scratch for a launch captured on `stream`: a buffer of the store that the graph owns
// (no allocation node, which would keep the graph from being nested in another as a child graph,
// as XLA's command buffers nest every captured call). The graph's executables share it: like a
// graph with allocation nodes, such a graph runs one executable at a time.
inline Status CaptureScratch(cudaStream_t stream, int device, std::size_t bytes, void** out) {
  ScopedRelaxedCaptureMode relaxed;  // cudaMalloc would invalidate a global-mode capture
  GraphTableStore* store = nullptr;
  CONSTMEM_RETURN_IF_ERROR(GraphTableStoreFor(device, &store));
  GraphTableStore::Buffer* buffer = nullptr;
  CONSTMEM_RETURN_IF_ERROR(store->Take(bytes, &buffer));
  CONSTMEM_RETURN_IF_ERROR(GiveToGraph(stream, store, buffer));
  *out = buffer->device;
  return Status::Ok();
}

}  // namespace detail

// How many host-table buffers graphs on `device` own now, and how many wait for reuse.
inline Status CapturedTableBuffers(int device, int* owned_by_graphs, int* idle) {
  detail::GraphTableStore* store = nullptr;
  CONSTMEM_RETURN_IF_ERROR(detail::GraphTableStoreFor(device, &store));
  *owned_by_graphs = store->owned_by_graphs();
  *idle = store->idle();
  return Status::Ok();
}

}  // namespace constmem
#pragma GCC visibility pop
