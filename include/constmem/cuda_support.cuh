// CUDA plumbing shared by the core: errors to Status, the device a stream belongs to, and a guard
// that makes a device current for the calling thread and restores the previous one.
//
// Current-device discipline: every core entry point that takes a stream resolves the stream's
// device (cudaStreamGetDevice) and makes it current only for the duration of the call, then
// restores what the caller had. Callers never need to call cudaSetDevice first, and a framework
// that keeps its own notion of the current device (TensorFlow's StreamExecutor does) is not
// disturbed.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "constmem/status.hpp"

namespace constmem {

inline Status CudaStatus(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return Status::Ok();
  cudaGetLastError();  // clear a non-sticky error so that the next call starts clean
  const StatusCode code =
      error == cudaErrorMemoryAllocation ? StatusCode::kResourceExhausted : StatusCode::kInternal;
  return Status(code, what,
                std::string(cudaGetErrorName(error)) + ": " + cudaGetErrorString(error));
}

#define CONSTMEM_RETURN_IF_CUDA_ERROR(expr, what) \
  CONSTMEM_RETURN_IF_ERROR(::constmem::CudaStatus((expr), (what)))

inline Status StreamDevice(cudaStream_t stream, int* device) {
#if CUDART_VERSION >= 12080
  return CudaStatus(cudaStreamGetDevice(stream, device), "cudaStreamGetDevice");
#else
  // Older runtimes cannot ask the stream; the caller's current device must be the stream's.
  (void)stream;
  return CudaStatus(cudaGetDevice(device), "cudaGetDevice");
#endif
}

// A process-unique id of the stream; unlike the handle, never reused after cudaStreamDestroy.
inline Status StreamId(cudaStream_t stream, unsigned long long* id) {
#if CUDART_VERSION >= 12000
  return CudaStatus(cudaStreamGetId(stream, id), "cudaStreamGetId");
#else
  *id = 0;  // no ids: every lease waits on the slot's event, which is always correct
  (void)stream;
  return Status::Ok();
#endif
}

class ScopedDevice {
 public:
  explicit ScopedDevice(int device) {
    status_ = CudaStatus(cudaGetDevice(&previous_), "cudaGetDevice");
    if (status_.ok() && previous_ != device) {
      status_ = CudaStatus(cudaSetDevice(device), "cudaSetDevice");
      switched_ = status_.ok();
    }
  }
  ~ScopedDevice() {
    if (switched_) cudaSetDevice(previous_);
  }
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

  const Status& status() const { return status_; }

 private:
  int previous_ = 0;
  bool switched_ = false;
  Status status_;
};

// True when `pointer` is page-locked host memory known to CUDA, the only kind of host memory a
// truly asynchronous copy may read.
inline bool IsPinnedHostMemory(const void* pointer) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeHost;
}

// Devices the core keeps state for; ordinals at or above it get an error, not undefined behaviour.
constexpr int kMaxDevices = 64;

inline Status CheckDeviceOrdinal(int device) {
  if (device < 0 || device >= kMaxDevices) {
    return Status(StatusCode::kFailedPrecondition, "device ordinal " + std::to_string(device) +
                                                       " is outside [0, " +
                                                       std::to_string(kMaxDevices) + ")");
  }
  return Status::Ok();
}

}  // namespace constmem
