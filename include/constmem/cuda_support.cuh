// SPDX-License-Identifier: Apache-2.0
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

#include <array>
#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>

#include "constmem/async_copy.cuh"  // Vector16
#include "constmem/status.hpp"

// Private to each library that compiles it (visibility.hpp).
#pragma GCC visibility push(hidden)
namespace constmem {

// Fault injection, in test builds only (CONSTMEM_TESTING_SWITCHES, which the CMake option
// CONSTMEM_TEST_HOOKS sets): the CUDA calls the core depends on can be made to fail on their Nth
// use, to prove that every failure gives a Status, leaks nothing and leaves the next call right.
// Elsewhere CONSTMEM_CUDA_CALL is the call itself.
enum class FaultPoint : int {
  kHostAlloc = 0,
  kEventRecord,
  kMemcpyAsync,
  kStreamWaitEvent,
  kKernelLaunch,
  kThreadStart,  // not a CUDA call: the staging pool's thread that frees buffers
  kCount,
};

#ifdef CONSTMEM_TESTING_SWITCHES
namespace detail {
inline std::array<std::atomic<int>, static_cast<int>(FaultPoint::kCount)>& FaultCountdowns() {
  static std::array<std::atomic<int>, static_cast<int>(FaultPoint::kCount)> countdowns{};
  return countdowns;
}
// True when the armed countdown of `point` reaches its call now.
inline bool FaultDue(FaultPoint point) {
  std::atomic<int>& countdown = FaultCountdowns()[static_cast<int>(point)];
  if (countdown.load(std::memory_order_relaxed) <= 0) return false;
  return countdown.fetch_sub(1, std::memory_order_relaxed) == 1;
}
}  // namespace detail

// Makes the `nth` next call at `point` (1 = the next) fail with cudaErrorUnknown; 0 disarms.
inline void InjectFaultForTesting(FaultPoint point, int nth) {
  detail::FaultCountdowns()[static_cast<int>(point)].store(nth, std::memory_order_relaxed);
}

// A CUDA call that fault injection can fail: CONSTMEM_CUDA_CALL(kEventRecord,
// cudaEventRecord(...)).
#define CONSTMEM_CUDA_CALL(point, expr) \
  (::constmem::detail::FaultDue(::constmem::FaultPoint::point) ? cudaErrorUnknown : (expr))
// Whether the armed fault at `point` is due now (a failure that is not a CUDA call's).
#define CONSTMEM_FAULT_DUE(point) ::constmem::detail::FaultDue(::constmem::FaultPoint::point)
#else
#define CONSTMEM_CUDA_CALL(point, expr) (expr)
#define CONSTMEM_FAULT_DUE(point) false
#endif

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

// CUDA graph capture: a bank upload recorded into a graph would be replayed without a lease, and
// the bank's events and staging would be captured too. Captured launches take the path of
// capture.cuh; a bank refuses a capturing stream up front, before it changes any state.
inline Status CheckNotCapturing(cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CONSTMEM_RETURN_IF_ERROR(
      CudaStatus(cudaStreamIsCapturing(stream, &capture), "cudaStreamIsCapturing"));
  if (capture != cudaStreamCaptureStatusNone) {
    return Status(StatusCode::kFailedPrecondition,
                  "the stream is capturing a CUDA graph; constmem tables cannot be captured");
  }
  return Status::Ok();
}

namespace detail {
// The driver API's answer, for runtimes before 12.8 (no cudaStreamGetDevice): the stream's
// context, made current for a moment to read its device. The entry points come from the runtime
// (cudaGetDriverEntryPoint), so nothing links libcuda.
inline Status StreamDeviceThroughDriver(cudaStream_t stream, int* device) {
  using GetCtx = int (*)(cudaStream_t, void**);
  using PushCtx = int (*)(void*);
  using PopCtx = int (*)(void**);
  using GetDevice = int (*)(int*);
  struct Entries {
    GetCtx get_ctx = nullptr;
    PushCtx push = nullptr;
    PopCtx pop = nullptr;
    GetDevice get_device = nullptr;
    bool ok = false;
  };
  static const Entries entries = [] {
    Entries e;
    cudaDriverEntryPointQueryResult found;
    auto load = [&](const char* name, void** fn) {
#if CUDART_VERSION >= 12050
      return cudaGetDriverEntryPointByVersion(name, fn, 12000, cudaEnableDefault, &found) ==
                 cudaSuccess &&
             found == cudaDriverEntryPointSuccess;
#else
      return cudaGetDriverEntryPoint(name, fn, cudaEnableDefault, &found) == cudaSuccess &&
             found == cudaDriverEntryPointSuccess;
#endif
    };
    e.ok = load("cuStreamGetCtx", reinterpret_cast<void**>(&e.get_ctx)) &&
           load("cuCtxPushCurrent", reinterpret_cast<void**>(&e.push)) &&
           load("cuCtxPopCurrent", reinterpret_cast<void**>(&e.pop)) &&
           load("cuCtxGetDevice", reinterpret_cast<void**>(&e.get_device));
    return e;
  }();
  if (!entries.ok) {
    cudaGetLastError();
    return Status(StatusCode::kFailedPrecondition,
                  "the CUDA driver lacks cuStreamGetCtx/cuCtxGetDevice");
  }
  void* context = nullptr;
  if (entries.get_ctx(stream, &context) != 0 || context == nullptr) {
    return Status(StatusCode::kInvalidArgument, "cuStreamGetCtx failed: not a valid stream");
  }
  if (entries.push(context) != 0) return Status(StatusCode::kInternal, "cuCtxPushCurrent failed");
  const int got = entries.get_device(device);
  void* popped = nullptr;
  entries.pop(&popped);
  return got == 0 ? Status::Ok() : Status(StatusCode::kInternal, "cuCtxGetDevice failed");
}
}  // namespace detail

namespace detail {
// StreamDevice for a stream already known not to be capturing.
inline Status DeviceOfStream(cudaStream_t stream, int* device) {
#if CUDART_VERSION >= 12080 && !defined(CONSTMEM_STREAM_DEVICE_THROUGH_DRIVER)
  return CudaStatus(cudaStreamGetDevice(stream, device), "cudaStreamGetDevice");
#else
  return StreamDeviceThroughDriver(stream, device);
#endif
}
}  // namespace detail

// The device a stream belongs to, whatever device is current on the calling thread (a TensorFlow
// thread's current device need not be the op's). A capturing stream is refused first: asking its
// device would fail and invalidate the capture.
inline Status StreamDevice(cudaStream_t stream, int* device) {
  CONSTMEM_RETURN_IF_ERROR(CheckNotCapturing(stream));
  return detail::DeviceOfStream(stream, device);
}

// Makes the calling thread's CUDA calls exempt from another thread's global-mode graph capture
// for the guard's life: the core's event queries and pinned allocations would otherwise fail and
// invalidate that capture.
class ScopedRelaxedCaptureMode {
 public:
  ScopedRelaxedCaptureMode() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  ~ScopedRelaxedCaptureMode() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  ScopedRelaxedCaptureMode(const ScopedRelaxedCaptureMode&) = delete;
  ScopedRelaxedCaptureMode& operator=(const ScopedRelaxedCaptureMode&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

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

namespace detail {
// Blocks of `kernel` with `threads` threads and `shared_bytes` of dynamic shared memory that the
// whole device holds at once; a block that does not fit a multiprocessor is an InvalidArgument.
inline Status QueryResidentBlocks(const void* kernel, int threads, int device,
                                  std::size_t shared_bytes, int* blocks) {
  int per_sm = 0, sms = 0;
  CONSTMEM_RETURN_IF_CUDA_ERROR(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, shared_bytes),
      "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  CONSTMEM_RETURN_IF_CUDA_ERROR(
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
      "cudaDeviceGetAttribute(MultiProcessorCount)");
  if (per_sm < 1) {
    return InvalidArgument("a block of " + std::to_string(threads) + " threads and " +
                           std::to_string(shared_bytes) +
                           " bytes of shared memory does not fit a multiprocessor");
  }
  *blocks = per_sm * sms;
  return Status::Ok();
}
}  // namespace detail

inline Status CheckDeviceOrdinal(int device) {
  if (device < 0 || device >= kMaxDevices) {
    return Status(StatusCode::kFailedPrecondition, "device ordinal " + std::to_string(device) +
                                                       " is outside [0, " +
                                                       std::to_string(kMaxDevices) + ")");
  }
  return Status::Ok();
}

namespace detail {
// The one `T` of `device`, made by `make()` on first use and kept for the life of the process
// (state that the device's pending work may still use at exit is never torn down). One table of
// instances per `T`.
template <class T, class Make>
Status PerDevice(int device, T** out, Make&& make) {
  CONSTMEM_RETURN_IF_ERROR(CheckDeviceOrdinal(device));
  static std::array<std::atomic<T*>, kMaxDevices> instances{};
  static std::mutex creation_mutex;
  T* existing = instances[device].load(std::memory_order_acquire);
  if (existing == nullptr) {
    std::lock_guard<std::mutex> lock(creation_mutex);
    existing = instances[device].load(std::memory_order_relaxed);
    if (existing == nullptr) {
      existing = make();
      instances[device].store(existing, std::memory_order_release);
    }
  }
  *out = existing;
  return Status::Ok();
}
}  // namespace detail

}  // namespace constmem
#pragma GCC visibility pop
