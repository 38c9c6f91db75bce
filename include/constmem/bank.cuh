// SPDX-License-Identifier: Apache-2.0
// Banks of __constant__ storage, split into slots, with uploads onto any stream and cross-stream
// hazards tracked by events.
//
// One line in a .cu file declares a bank and its host handle:
//
//   CONSTMEM_DEFINE_BANK(filter_taps, float, 1024, 4);   // 4 slots of 1,024 floats = 16 KiB
//
// The bank and every kernel that reads it must be in the same translation unit unless the code is
// built with relocatable device code (-rdc=true): without -rdc each translation unit is its own
// device module with its own copy of a __constant__ symbol, so a copy into the symbol as one file
// sees it never reaches the kernels of another file. The symbol is `static` for the same reason.
//
// Use, all on one stream:
//
//   constmem::Lease<float> lease;
//   CONSTMEM_RETURN_IF_ERROR(filter_taps().Acquire(stream, n, host_taps, &lease));
//   CONSTMEM_RETURN_IF_ERROR(lease.UploadFromPageableHost(host_taps, n));
//   kernel<<<grid, block, 0, stream>>>(filter_taps_reader{lease.offset()}, ...);
//   CONSTMEM_RETURN_IF_ERROR(lease.Release());   // after the last launch that reads the slot
//
// The protocol, and why it is enough. Each slot has an event recorded on the stream of the last
// lease that used it, after that lease's kernels. Acquire makes the new stream wait for that event
// (cudaStreamWaitEvent, a device-side wait), so
//   - a later upload never overwrites a table that an earlier kernel on any stream may still read,
//   - a kernel never reads a slot before the upload it depends on has landed, even when that upload
//     was enqueued by another stream and this lease skipped its own copy as unchanged.
// Leases of one slot are thereby ordered on the device in the order the host took them; leases of
// different slots are independent, which is what lets streams overlap. The host waits only for
// another host thread that holds the same slot between Acquire and Release (microseconds of
// enqueueing), never for the device.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "constmem/cuda_support.cuh"
#include "constmem/hazard_tracking.hpp"
#include "constmem/slot_planner.hpp"
#include "constmem/staging.cuh"
#include "constmem/stats.hpp"
#include "constmem/strategy.hpp"

// Private to each library that compiles it (visibility.hpp).
#pragma GCC visibility push(hidden)
namespace constmem {

namespace detail {

// A bank's state on one device: the symbol's address there, the slot bookkeeping and one event
// per slot. Works in bytes; Bank<T> and Lease<T> add the element type.
class DeviceBank {
 public:
  static Status Create(const void* symbol, int slot_count, std::size_t slot_bytes,
                       std::unique_ptr<DeviceBank>* out) {
    std::unique_ptr<DeviceBank> bank(new DeviceBank(slot_count, slot_bytes));
    void* address = nullptr;
    CONSTMEM_RETURN_IF_CUDA_ERROR(cudaGetSymbolAddress(&address, symbol), "cudaGetSymbolAddress");
    bank->address_ = static_cast<char*>(address);
    for (auto& slot : bank->slot_events_) {
      CONSTMEM_RETURN_IF_CUDA_ERROR(
          cudaEventCreateWithFlags(&slot.released, cudaEventDisableTiming),
          "cudaEventCreate(slot)");
    }
    *out = std::move(bank);
    return Status::Ok();
  }
  // Events are never destroyed: the bank lives until process exit, and destroying an event at
  // exit, after the CUDA runtime has shut down, would fail.

  std::size_t slot_bytes() const { return planner_.slot_bytes(); }
  // The device address of slot `start` (as kernels of the symbol's module see it).
  char* SlotAddress(int start) const {
    return address_ + static_cast<std::size_t>(start) * slot_bytes();
  }

  // `owner` identifies the calling thread: it never waits for a run that only its own leases block.
  Status Acquire(cudaStream_t stream, std::size_t bytes, const void* host_content,
                 std::uint64_t owner, int* start, int* span) {
    unsigned long long stream_id = 0;
    CONSTMEM_RETURN_IF_ERROR(StreamId(stream, &stream_id));
    std::unique_lock<std::mutex> lock(mutex_);
    const int needed = planner_.SlotsNeeded(bytes);
    if (needed == 0) {
      return InvalidArgument("a table of " + std::to_string(bytes) +
                             " bytes does not fit a bank of " +
                             std::to_string(planner_.capacity_bytes()) + " bytes");
    }
    int found = -1;
    while (true) {
      // A run that holds the same bytes saves the copy, but only when it is free: waiting for it
      // would serialise streams, or wait for ever if the caller holds it.
      found = host_content != nullptr ? planner_.FindContent(host_content, bytes) : -1;
      if (found >= 0 && planner_.RunIsFree(found, needed)) break;
      found = planner_.FindFreeRun(needed);
      if (found >= 0) break;
      if (!planner_.CanBecomeFree(needed, owner)) {
        return Status(StatusCode::kFailedPrecondition,
                      "every run of " + std::to_string(needed) +
                          " slots that could hold this table is leased by the calling thread "
                          "or quarantined; release a lease first (slots: " +
                          planner_.Describe(owner) + ")");
      }
      slot_freed_.wait(lock);
    }
    planner_.Lease(found, needed, owner);
    lock.unlock();

    if (HazardTrackingEnabled()) {
      for (int i = found; i < found + needed; ++i) {
        // Work on one stream is already ordered; ids, unlike handles, are never reused.
        if (!slot_events_[i].recorded) continue;
        if (stream_id != 0 && slot_events_[i].stream_id == stream_id) continue;
        const Status status =
            CudaStatus(CONSTMEM_CUDA_CALL(kStreamWaitEvent,
                                          cudaStreamWaitEvent(stream, slot_events_[i].released, 0)),
                       "cudaStreamWaitEvent(slot)");
        if (!status.ok()) {
          Unlease(found, needed);
          return status;
        }
      }
    }
    *start = found;
    *span = needed;
    return Status::Ok();
  }

  // With `dedupe`, a host upload whose bytes the run already holds is skipped, and the bytes are
  // remembered for the next lease (a compare and a copy on the host, worth it for tables that
  // repeat, such as attrs).
  // `offset` bytes into the run (another table of the same lease), nothing is remembered.
  Status Upload(int start, int span, cudaStream_t stream, const void* source, std::size_t bytes,
                SourceKind kind, bool dedupe, bool* skipped, std::size_t offset = 0) {
    const bool remember = dedupe && kind != SourceKind::kDevice && offset == 0;
    if (remember) {
      std::lock_guard<std::mutex> lock(mutex_);
      *skipped = planner_.Holds(start, source, bytes);
    } else {
      *skipped = false;
    }
    if (*skipped) {
      Count(Counter::kUploadSkipped);
      return Status::Ok();
    }
    const Status status =
        CopyTableToDevice(SlotAddress(start) + offset, source, bytes, kind, stream);
    std::lock_guard<std::mutex> lock(mutex_);
    planner_.RecordContent(start, span, remember && status.ok() ? source : nullptr, bytes);
    return status;
  }

  Status Release(int start, int span, cudaStream_t stream) {
    // Nothing but the capture query may touch a capturing stream: even cudaStreamGetId fails
    // there and invalidates the capture.
    Status status = CheckNotCapturing(stream);
    unsigned long long stream_id = 0;
    if (status.ok()) status = StreamId(stream, &stream_id);
    if (HazardTrackingEnabled()) {
      for (int i = start; i < start + span && status.ok(); ++i) {
        status = CudaStatus(
            CONSTMEM_CUDA_CALL(kEventRecord, cudaEventRecord(slot_events_[i].released, stream)),
            "cudaEventRecord(slot)");
        if (status.ok()) {
          slot_events_[i].recorded = true;
          slot_events_[i].stream_id = stream_id;
        }
      }
    }
    if (!status.ok()) {
      // Without its event the run's last reader is unknown: the next lease would have nothing to
      // wait for. Take the run out of use until the owner says the device is idle.
      {
        std::lock_guard<std::mutex> lock(mutex_);
        planner_.Quarantine(start, span);
      }
      Count(Counter::kSlotQuarantined, span);
    }
    Unlease(start, span);
    return status;
  }

  // Puts quarantined slots back into use; only after a device sync (nothing may still read them).
  int ClearQuarantine() {
    int cleared = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      cleared = planner_.ClearQuarantine();
      for (auto& slot : slot_events_) slot.recorded = false;
    }
    slot_freed_.notify_all();
    return cleared;
  }

 private:
  struct SlotEvent {
    cudaEvent_t released = nullptr;
    // Both touched only by the thread that holds the slot's lease.
    bool recorded = false;
    unsigned long long stream_id = 0;
  };

  DeviceBank(int slot_count, std::size_t slot_bytes)
      : planner_(slot_count, slot_bytes), slot_events_(static_cast<std::size_t>(slot_count)) {}

  void Unlease(int start, int span) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      planner_.Unlease(start, span);
    }
    slot_freed_.notify_all();
  }

  char* address_ = nullptr;
  std::mutex mutex_;
  std::condition_variable slot_freed_;
  SlotPlanner planner_;
  std::vector<SlotEvent> slot_events_;
};

}  // namespace detail

template <class T>
class Bank;

// The right to use a run of a bank's slots on one stream, from Acquire until Release. Released by
// the destructor if the caller did not; movable, not copyable.
template <class T>
class Lease {
 public:
  Lease() = default;
  Lease(Lease&& other) noexcept { *this = std::move(other); }
  Lease& operator=(Lease&& other) noexcept {
    if (this != &other) {
      (void)Release();
      bank_ = other.bank_;
      device_ = other.device_;
      stream_ = other.stream_;
      start_ = other.start_;
      span_ = other.span_;
      skipped_ = other.skipped_;
      slot_elements_ = other.slot_elements_;
      dedupe_ = other.dedupe_;
      other.bank_ = nullptr;
    }
    return *this;
  }
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease() { (void)Release(); }

  bool active() const { return bank_ != nullptr; }
  // First element of the leased run within the bank's symbol: what the kernel's reader needs.
  int offset() const { return static_cast<int>(start_ * slot_elements_); }
  std::size_t capacity() const { return span_ * slot_elements_; }
  int first_slot() const { return start_; }
  // The leased run's device address: what a kernel reads a bank of global memory through
  // (CONSTMEM_DEFINE_GLOBAL_BANK), as GlobalTableReader or SharedTableSource.
  const T* data() const {
    return active() ? reinterpret_cast<const T*>(bank_->SlotAddress(start_)) : nullptr;
  }
  // True when the last upload found the run already holding the same bytes and copied nothing.
  bool upload_skipped() const { return skipped_; }

  Status UploadFromDevice(const T* source, std::size_t count) {
    return Upload(source, count, SourceKind::kDevice);
  }
  Status UploadFromPinnedHost(const T* source, std::size_t count) {
    return Upload(source, count, SourceKind::kPinnedHost);
  }
  Status UploadFromPageableHost(const T* source, std::size_t count) {
    return Upload(source, count, SourceKind::kPageableHost);
  }
  Status Upload(const T* source, std::size_t count, SourceKind kind) {
    return UploadAt(0, source, count, kind);
  }
  // `count` elements into the run from its element `first` on: several tables in one lease, each
  // at its own offset (one kernel parameter reads them all). Only an upload at 0 can be skipped.
  Status UploadAt(std::size_t first, const T* source, std::size_t count, SourceKind kind) {
    if (!active())
      return Status(StatusCode::kFailedPrecondition, "upload through a released lease");
    if (count == 0 || first > capacity() || count > capacity() - first) {
      return InvalidArgument("upload of " + std::to_string(count) + " elements at " +
                             std::to_string(first) + " into a lease of " +
                             std::to_string(capacity()));
    }
    if (source == nullptr) return InvalidArgument("upload from a null pointer");
    ScopedRelaxedCaptureMode relaxed;
    CONSTMEM_RETURN_IF_ERROR(CheckNotCapturing(stream_));
    ScopedDevice device(device_);
    CONSTMEM_RETURN_IF_ERROR(device.status());
    return bank_->Upload(start_, span_, stream_, source, count * sizeof(T), kind,
                         dedupe_ && first == 0, &skipped_, first * sizeof(T));
  }

  // Ends the lease: call after enqueueing the last kernel that reads the run.
  Status Release() {
    if (!active()) return Status::Ok();
    detail::DeviceBank* bank = bank_;
    bank_ = nullptr;
    ScopedRelaxedCaptureMode relaxed;
    ScopedDevice device(device_);
    const Status switched = device.status();
    const Status released = bank->Release(start_, span_, stream_);
    return switched.ok() ? released : switched;
  }

 private:
  friend class Bank<T>;
  detail::DeviceBank* bank_ = nullptr;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  int start_ = 0;
  int span_ = 0;
  bool skipped_ = false;
  bool dedupe_ = false;
  std::size_t slot_elements_ = 0;
};

// The host handle of a bank. Thread-safe; per-device state is created on first use on a device.
template <class T>
class Bank {
 public:
  Bank(const void* symbol, std::size_t slot_elements, int slot_count, const char* name)
      : symbol_(symbol), slot_elements_(slot_elements), slot_count_(slot_count), name_(name) {}
  Bank(const Bank&) = delete;
  Bank& operator=(const Bank&) = delete;

  std::size_t slot_elements() const { return slot_elements_; }
  int slot_count() const { return slot_count_; }
  std::size_t capacity_elements() const { return slot_elements_ * slot_count_; }
  const char* name() const { return name_; }
  // The bank's __constant__ (or __device__) symbol, as cudaGetSymbolAddress takes it.
  const void* symbol() const { return symbol_; }

  // Puts back into use the slots taken out after a failed release on `device`; call only once no
  // work that reads the bank can be pending there (after cudaDeviceSynchronize). Returns how many.
  int ClearQuarantine(int device) {
    if (device < 0 || device >= kMaxDevices) return 0;
    detail::DeviceBank* bank = states_[device].load(std::memory_order_acquire);
    return bank == nullptr ? 0 : bank->ClearQuarantine();
  }

  // Leases enough slots for `count` elements on `stream`. Passing the host content the upload will
  // come from asks for deduplication: a run that already holds those bytes is preferred and the
  // upload skipped. Pass nullptr for tables that change every call (it saves a compare and a
  // copy). Blocks only while other host threads hold every suitable run; returns
  // FailedPrecondition instead where only the calling thread's own leases stand in the way. An
  // active `lease` is released first. A stream that is capturing a CUDA graph is refused.
  Status Acquire(cudaStream_t stream, std::size_t count, const T* host_content, Lease<T>* lease) {
    CONSTMEM_RETURN_IF_ERROR(lease->Release());
    if (count == 0 || count > capacity_elements()) {
      return InvalidArgument(std::string("bank '") + name_ + "' holds at most " +
                             std::to_string(capacity_elements()) + " elements; asked for " +
                             std::to_string(count));
    }
    ScopedRelaxedCaptureMode relaxed;
    int device = 0;
    CONSTMEM_RETURN_IF_ERROR(StreamDevice(stream, &device));  // refuses a capturing stream
    CONSTMEM_RETURN_IF_ERROR(CheckDeviceOrdinal(device));
    ScopedDevice guard(device);
    CONSTMEM_RETURN_IF_ERROR(guard.status());
    detail::DeviceBank* bank = nullptr;
    CONSTMEM_RETURN_IF_ERROR(StateFor(device, &bank));
    Lease<T> acquired;
    CONSTMEM_RETURN_IF_ERROR(bank->Acquire(stream, count * sizeof(T), host_content, ThreadOwnerId(),
                                           &acquired.start_, &acquired.span_));
    acquired.bank_ = bank;
    acquired.device_ = device;
    acquired.stream_ = stream;
    acquired.slot_elements_ = slot_elements_;
    acquired.dedupe_ = host_content != nullptr;
    *lease = std::move(acquired);
    return Status::Ok();
  }

 private:
  Status StateFor(int device, detail::DeviceBank** out) {
    detail::DeviceBank* existing = states_[device].load(std::memory_order_acquire);
    if (existing == nullptr) {
      std::lock_guard<std::mutex> lock(creation_mutex_);
      existing = states_[device].load(std::memory_order_relaxed);
      if (existing == nullptr) {
        std::unique_ptr<detail::DeviceBank> created;
        CONSTMEM_RETURN_IF_ERROR(
            detail::DeviceBank::Create(symbol_, slot_count_, slot_elements_ * sizeof(T), &created));
        existing = created.release();  // kept for the life of the process, like the symbol
        states_[device].store(existing, std::memory_order_release);
      }
    }
    *out = existing;
    return Status::Ok();
  }

  static std::uint64_t ThreadOwnerId() {
    return static_cast<std::uint64_t>(std::hash<std::thread::id>()(std::this_thread::get_id())) | 1;
  }

  const void* symbol_;
  std::size_t slot_elements_;
  int slot_count_;
  const char* name_;
  std::mutex creation_mutex_;
  std::array<std::atomic<detail::DeviceBank*>, kMaxDevices> states_{};
};

namespace detail {
// The bank of T's entries among a float and a double bank (CONSTMEM_DEFINE_FLOAT_BANKS).
template <class T, class F32, class F64>
struct FloatBankOf {
  static_assert(std::is_same<T, float>::value || std::is_same<T, double>::value,
                "constmem: float banks hold float or double entries");
  using type = std::conditional_t<std::is_same<T, float>::value, F32, F64>;
};
}  // namespace detail

}  // namespace constmem
#pragma GCC visibility pop

// Declares `static __constant__ T name##_constmem_symbol[slot_elements * slot_count]`, its host
// handle `name()`, a device-side reader `name##_reader{offset}` for kernels of this file, and
// `name##_bank`, the two together (Entry, Reader, kBytes, get()), which LaunchWithTable takes so
// that a reader can never be paired with another bank. Use it at global scope, outside any
// namespace. The handle is local to the translation unit, as the symbol is (`name##_bank` is in an
// anonymous namespace): a bank of the same name in another file or library is another bank; the
// reader has device code only. ptxas refuses a translation unit whose __constant__ data exceeds
// 64 KiB ("File uses too much global constant data").
#define CONSTMEM_DEFINE_BANK(name, T, slot_elements, slot_count)                \
  static __constant__ T name##_constmem_symbol[(slot_elements) * (slot_count)]; \
  struct name##_reader {                                                        \
    int offset;                                                                 \
    __device__ __forceinline__ T operator[](int i) const {                      \
      return name##_constmem_symbol[offset + i];                                \
    }                                                                           \
  };                                                                            \
  namespace {                                                                   \
  struct name##_bank {                                                          \
    using Reader = name##_reader;                                               \
    CONSTMEM_DETAIL_BANK_MEMBERS(name, T, slot_elements, slot_count)            \
  };                                                                            \
  }                                                                             \
  CONSTMEM_DETAIL_BANK_HANDLE(name);                                            \
  static_assert(name##_bank::kBytes <= ::constmem::kConstantMemoryBytes,        \
                "constmem: a bank of __constant__ memory holds at most 64 KiB")

// The same bank protocol over `static __device__ T name##_constmem_symbol[...]`: slots of global
// memory, for tables that a kernel reads at divergent indices (through the read-only cache, or
// staged into shared memory) but that come from the host. Its size does not count against the
// 64 KiB of __constant__ space. Declares `name()` and `name##_bank` (Entry, kBytes, get()); kernels
// read a lease through its address, `lease.data()`, so there is no reader type.
#define CONSTMEM_DEFINE_GLOBAL_BANK(name, T, slot_elements, slot_count)       \
  static __device__ T name##_constmem_symbol[(slot_elements) * (slot_count)]; \
  namespace {                                                                 \
  struct name##_bank {                                                        \
    CONSTMEM_DETAIL_BANK_MEMBERS(name, T, slot_elements, slot_count)          \
  };                                                                          \
  }                                                                           \
  CONSTMEM_DETAIL_BANK_HANDLE(name)

// What both kinds of bank have: the entry type, the size and the host handle of the symbol.
#define CONSTMEM_DETAIL_BANK_MEMBERS(name, T, slot_elements, slot_count)                           \
  using Entry = T;                                                                                 \
  static constexpr std::size_t kBytes = sizeof(T) * (slot_elements) * (slot_count);                \
  static ::constmem::Bank<T>& get() {                                                              \
    static ::constmem::Bank<T> bank(name##_constmem_symbol, (slot_elements), (slot_count), #name); \
    return bank;                                                                                   \
  }

// `name()`, the bank's host handle, and the check that it is not empty.
#define CONSTMEM_DETAIL_BANK_HANDLE(name)                             \
  [[maybe_unused]] static auto& name() { return name##_bank::get(); } \
  static_assert(name##_bank::kBytes > 0, "constmem: empty bank")

// Two banks of the same shape, of float and of double entries, for an op over either data type:
// `name_f32` and `name_f64` as CONSTMEM_DEFINE_BANK makes them, and `name_banks::Of<T>`, the bank
// of T's entries (CONSTMEM_DEFINE_FLOAT_GLOBAL_BANKS: the same in global memory).
#define CONSTMEM_DEFINE_FLOAT_BANKS(name, slot_elements, slot_count) \
  CONSTMEM_DETAIL_FLOAT_BANKS(CONSTMEM_DEFINE_BANK, name, slot_elements, slot_count)
#define CONSTMEM_DEFINE_FLOAT_GLOBAL_BANKS(name, slot_elements, slot_count) \
  CONSTMEM_DETAIL_FLOAT_BANKS(CONSTMEM_DEFINE_GLOBAL_BANK, name, slot_elements, slot_count)
#define CONSTMEM_DETAIL_FLOAT_BANKS(define, name, slot_elements, slot_count)                 \
  define(name##_f32, float, slot_elements, slot_count);                                      \
  define(name##_f64, double, slot_elements, slot_count);                                     \
  struct name##_banks {                                                                      \
    template <class T>                                                                       \
    using Of =                                                                               \
        typename ::constmem::detail::FloatBankOf<T, name##_f32_bank, name##_f64_bank>::type; \
  }
