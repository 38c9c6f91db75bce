// SPDX-License-Identifier: Apache-2.0
// One launch with a table, wherever the table should live. An op's launcher names its by-value
// parameter type and its bank (the `name##_bank` that CONSTMEM_DEFINE_BANK declares), and hands
// over a callable that launches its kernel with whichever table reader it is given:
//
//   CONSTMEM_DEFINE_BANK(taps, float, 1024, 4);
//   using TapsByValue = constmem::ByValueTable<float, 1024>;
//
//   return constmem::LaunchWithTable<TapsByValue, taps_bank>(
//       stream, table, placement, [&](int device, const auto& taps) {
//         MyKernel<<<grid, block, 0, stream>>>(in, out, n, taps);
//         return constmem::CudaStatus(cudaGetLastError(), "MyKernel launch");
//       });
//
// The callable is instantiated once per reader type: the by-value table, the bank's reader and
// GlobalTableReader<T>. A kernel reads all three with `taps[j]`.
//
// A kernel that reads its table at divergent indices (a lookup) names a third bank, of global
// memory (CONSTMEM_DEFINE_GLOBAL_BANK), which takes host tables placed in global or shared memory;
// its callable also gets a SharedTableSource<T> and a ByValueSharedSource<ByValue>
// (shared_table.cuh), which the kernel stages with StageTable and launches with StagedTableBytes
// of dynamic shared memory. A callable given the GlobalTableReader of a table too large to stage
// may stage its first entries all the same: it launches with SharedPrefixSource<T>{reader.values,
// entries} instead (Interpolate's float32 knots past 16,384).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "constmem/bank.cuh"
#include "constmem/by_value.cuh"
#include "constmem/capture.cuh"
#include "constmem/cuda_support.cuh"
#include "constmem/hazard_tracking.hpp"
#include "constmem/shared_table.cuh"
#include "constmem/stats.hpp"
#include "constmem/strategy.hpp"
#include "constmem/stream_buffer.cuh"
#include "constmem/table.hpp"

// Private to each library that compiles it (visibility.hpp).
#pragma GCC visibility push(hidden)
namespace constmem {

// Room for a kernel's other parameters next to a by-value table, in the parameter-size check.
constexpr std::size_t kOtherKernelParamBytes = 64;

// The DeviceBankOf of an op whose kernel reads its table with warp-uniform indices only: no
// global-memory bank, no shared-memory placement, and no host table in global memory.
struct NoDeviceBank {};

namespace detail {

template <class DeviceBankOf>
constexpr bool kStagesTables = !std::is_same<DeviceBankOf, NoDeviceBank>::value;

template <class Entry>
Status CannotPlace(const TableView<Entry>& table, Placement placement) {
  const bool host = table.source != SourceKind::kDevice;
  return InvalidArgument(std::string("a ") + (host ? "host" : "device") + " table of " +
                         std::to_string(table.size) + " entries cannot be placed in " +
                         PlacementName(placement));
}

// Launches with the table at `values` (device memory) in global or shared memory.
template <class DeviceBankOf, class Entry, class LaunchFn>
Status LaunchFromGlobal(int device, const Entry* values, Placement placement, LaunchFn& launch) {
  if constexpr (kStagesTables<DeviceBankOf>) {
    if (placement == Placement::kSharedMemory) {
      return launch(device, SharedTableSource<Entry>{values});
    }
  }
  return launch(device, GlobalTableReader<Entry>{values});
}

// A host table as the kernel's by-value parameter, checked against the parameter limit.
template <class ByValue, class Entry>
Status MakeByValue(int device, const TableView<Entry>& table, ByValue* by_value) {
  CONSTMEM_RETURN_IF_ERROR(
      FillByValueTable(table.values, static_cast<std::size_t>(table.size), by_value));
  return CheckKernelParamBytes(sizeof(ByValue) + kOtherKernelParamBytes, device);
}

// The placements of LaunchWithTable on a stream that is not capturing, one function each.

template <class ByValue, class Entry, class LaunchFn>
Status LaunchByValue(int device, const TableView<Entry>& table, LaunchFn& launch) {
  if (table.source == SourceKind::kDevice) return CannotPlace(table, Placement::kByValue);
  ByValue by_value;
  CONSTMEM_RETURN_IF_ERROR(MakeByValue(device, table, &by_value));
  Count(Counter::kByValueLaunch);
  return launch(device, static_cast<const ByValue&>(by_value));
}

// A host table that fits ByValue, read at divergent indices: passed by value and staged by each
// block into shared memory, with no copy to the device.
template <class ByValue, class Entry, class LaunchFn>
Status LaunchByValueStaged(int device, const TableView<Entry>& table, LaunchFn& launch) {
  ByValueSharedSource<ByValue> staged;
  CONSTMEM_RETURN_IF_ERROR(MakeByValue(device, table, &staged.table));
  Count(Counter::kSharedMemoryLaunch);
  return launch(device, static_cast<const ByValueSharedSource<ByValue>&>(staged));
}

template <class BankOf, class Entry, class LaunchFn>
Status LaunchFromConstantBank(cudaStream_t stream, int device, const TableView<Entry>& table,
                              LaunchFn& launch, LaunchReport* report) {
  const bool dedupe = table.repeats && table.source != SourceKind::kDevice;
  const auto count = static_cast<std::size_t>(table.size);
  Lease<Entry> lease;
  CONSTMEM_RETURN_IF_ERROR(
      BankOf::get().Acquire(stream, count, dedupe ? table.values : nullptr, &lease));
  CONSTMEM_RETURN_IF_ERROR(lease.Upload(table.values, count, table.source));
  if (report != nullptr) report->upload_skipped = lease.upload_skipped();
  Count(Counter::kConstantBankLaunch);
  // The lease's destructor releases it on an error path too: the slot's event then covers
  // whatever did reach the stream.
  CONSTMEM_RETURN_IF_ERROR(launch(device, typename BankOf::Reader{lease.offset()}));
  return lease.Release();
}

// A host table in global memory without a lease: copied into a stream-ordered device buffer
// (stream_buffer.cuh), freed on the stream after the launch. What a host table larger than the
// op's global bank, or of an op without one, takes: any size the device's memory holds.
template <class DeviceBankOf, class Entry, class LaunchFn>
Status LaunchFromStreamBuffer(cudaStream_t stream, int device, const TableView<Entry>& table,
                              Placement placement, LaunchFn& launch) {
  const std::size_t bytes = static_cast<std::size_t>(table.size) * sizeof(Entry);
  StreamOrderedBuffer buffer;
  CONSTMEM_RETURN_IF_ERROR(buffer.Allocate(stream, device, bytes));
  CONSTMEM_RETURN_IF_ERROR(
      CopyTableToDevice(buffer.data(), table.values, bytes, table.source, stream));
  Count(Counter::kStreamBufferUpload);
  CONSTMEM_RETURN_IF_ERROR(LaunchFromGlobal<DeviceBankOf>(
      device, static_cast<const Entry*>(buffer.data()), placement, launch));
  return buffer.Release();
}

// kGlobalMemory and kSharedMemory: a device table is read (or staged) in place, a host table is
// uploaded into a lease of DeviceBankOf's global bank first, or where it does not fit that bank
// (or the op has none) into a stream-ordered buffer. kSharedMemory needs DeviceBankOf (a kernel
// that stages its table).
template <class DeviceBankOf, class Entry, class LaunchFn>
Status LaunchFromGlobalMemory(cudaStream_t stream, int device, const TableView<Entry>& table,
                              Placement placement, LaunchFn& launch, LaunchReport* report) {
  const bool host = table.source != SourceKind::kDevice;
  const auto count = static_cast<std::size_t>(table.size);
  if constexpr (!kStagesTables<DeviceBankOf>) {
    if (placement == Placement::kSharedMemory) return CannotPlace(table, placement);
    Count(Counter::kGlobalMemoryLaunch);
    if (host) return LaunchFromStreamBuffer<DeviceBankOf>(stream, device, table, placement, launch);
    return launch(device, GlobalTableReader<Entry>{table.values});
  } else {
    Count(placement == Placement::kSharedMemory ? Counter::kSharedMemoryLaunch
                                                : Counter::kGlobalMemoryLaunch);
    if (!host) return LaunchFromGlobal<DeviceBankOf>(device, table.values, placement, launch);
    if (count > DeviceBankOf::get().capacity_elements()) {
      return LaunchFromStreamBuffer<DeviceBankOf>(stream, device, table, placement, launch);
    }
    Lease<Entry> lease;
    CONSTMEM_RETURN_IF_ERROR(
        DeviceBankOf::get().Acquire(stream, count, table.repeats ? table.values : nullptr, &lease));
    CONSTMEM_RETURN_IF_ERROR(lease.Upload(table.values, count, table.source));
    if (report != nullptr) report->upload_skipped = lease.upload_skipped();
    CONSTMEM_RETURN_IF_ERROR(
        LaunchFromGlobal<DeviceBankOf>(device, lease.data(), placement, launch));
    return lease.Release();
  }
}

// What the capture path exists to prevent, for test and unsafe builds with hazard tracking off
// (hazard_tracking.hpp): a captured copy into the bank's first slots, which every replay of every
// graph writes, read through the bank (what capture_gpu_test's concurrent test catches).
template <class BankOf, class Entry, class LaunchFn>
Status LaunchCapturedUnprotected(cudaStream_t stream, int device, const Entry* values,
                                 std::size_t count, LaunchFn& launch) {
  void* symbol = nullptr;
  CONSTMEM_RETURN_IF_CUDA_ERROR(cudaGetSymbolAddress(&symbol, BankOf::get().symbol()),
                                "cudaGetSymbolAddress");
  CONSTMEM_RETURN_IF_CUDA_ERROR(
      cudaMemcpyAsync(symbol, values, count * sizeof(Entry), cudaMemcpyDeviceToDevice, stream),
      "cudaMemcpyAsync(captured symbol)");
  return launch(device, typename BankOf::Reader{0});
}

// Under capture: the table stays where it is and is read from device memory (capture.cuh).
template <class BankOf, class DeviceBankOf, class Entry, class LaunchFn>
Status LaunchCapturedFromGlobal(cudaStream_t stream, int device, const Entry* values,
                                std::size_t count, Placement* placement, LaunchFn& launch) {
  if constexpr (kHazardTrackingCanBeOff) {
    if (!HazardTrackingEnabled()) {
      *placement = Placement::kConstantBank;
      return LaunchCapturedUnprotected<BankOf>(stream, device, values, count, launch);
    }
  }
  return LaunchFromGlobal<DeviceBankOf>(device, values, *placement, launch);
}

template <class ByValue, class BankOf, class DeviceBankOf, class Entry, class LaunchFn>
Status LaunchCaptured(cudaStream_t stream, const TableView<Entry>& table, Placement placement,
                      LaunchFn& launch, LaunchReport* report) {
  // The calls below (allocations, the staging pool's event queries) would invalidate a capture in
  // global or thread-local mode; none of them is recorded into the graph.
  ScopedRelaxedCaptureMode relaxed;
  int device = 0;
  CONSTMEM_RETURN_IF_CUDA_ERROR(cudaGetDevice(&device), "cudaGetDevice");
  CONSTMEM_RETURN_IF_ERROR(CheckDeviceOrdinal(device));
  const bool host = table.source != SourceKind::kDevice;
  const auto count = static_cast<std::size_t>(table.size);
  CapturedTable captured;
  captured.size = table.size;
  // A table read at divergent indices keeps its global or shared placement.
  const bool in_global = kStagesTables<DeviceBankOf> && (placement == Placement::kGlobalMemory ||
                                                         placement == Placement::kSharedMemory);
  if (host && count <= ByValue::kCapacity && !in_global) {
    ByValue by_value;
    CONSTMEM_RETURN_IF_ERROR(MakeByValue(device, table, &by_value));
    placement = Placement::kByValue;
    CONSTMEM_RETURN_IF_ERROR(launch(device, static_cast<const ByValue&>(by_value)));
    captured.by_value = true;
  } else {
    if (!in_global) placement = Placement::kGlobalMemory;
    const Entry* values = table.values;
    if (host) {
      GraphTableStore::Buffer* buffer = nullptr;
      CONSTMEM_RETURN_IF_ERROR(
          CaptureHostTable(stream, device, table.values, count * sizeof(Entry), &buffer));
      values = static_cast<const Entry*>(buffer->device);
      captured.buffer = buffer->device;
    }
    CONSTMEM_RETURN_IF_ERROR((LaunchCapturedFromGlobal<BankOf, DeviceBankOf>(
        stream, device, values, count, &placement, launch)));
  }
  Count(Counter::kCapturedLaunch);
  if (report != nullptr) {
    report->placement = placement;
    report->captured = true;
    report->capture = captured;
  }
  return Status::Ok();
}

}  // namespace detail

// Runs `launch(device, reader)` on `stream` with the table placed as `placement` says:
//   kByValue       host table -> ByValue parameter (Entry converted to ByValue's element type);
//   kConstantBank  any table  -> a lease of BankOf's bank, uploaded on `stream`, released after
//                  the launch;
//   kGlobalMemory  device table read in place; a host table copied into a lease of DeviceBankOf's
//                  global-memory bank first, or into a stream-ordered device buffer where it does
//                  not fit that bank or the op has none (any size);
//   kSharedMemory  the same, staged by every block into shared memory (DeviceBankOf's ops only);
//                  a host table that fits ByValue is passed by value and staged from there
//                  (ByValueSharedSource), with no copy to the device.
// The stream's device is made current for the call. A placement the source cannot take (by value
// from device memory, shared memory for an op without a global bank) is an InvalidArgument.
//
// On a stream that is capturing a CUDA graph the placement is the graph's (capture.cuh): by value
// when a host table fits ByValue, a device table in place, a larger host table in a device buffer
// the graph owns; `report->capture` then says what UpdateCapturedTable needs. Under capture the
// current device must be the stream's (a capturing stream cannot be asked; every framework's
// capture runs on its current device).
template <class ByValue, class BankOf, class DeviceBankOf = NoDeviceBank, class Entry,
          class LaunchFn>
Status LaunchWithTable(cudaStream_t stream, const TableView<Entry>& table, Placement placement,
                       LaunchFn&& launch, LaunchReport* report = nullptr) {
  static_assert(std::is_same<typename BankOf::Entry, Entry>::value,
                "the bank holds entries of another type than the table");
  if constexpr (detail::kStagesTables<DeviceBankOf>) {
    static_assert(std::is_same<typename DeviceBankOf::Entry, Entry>::value,
                  "the global bank holds entries of another type than the table");
  }
  if (report != nullptr) *report = LaunchReport(placement);
  if (table.values == nullptr || table.size < 1) {
    return InvalidArgument("a table needs at least one entry; got " + std::to_string(table.size));
  }
  bool capturing = false;
  CONSTMEM_RETURN_IF_ERROR(IsCapturing(stream, &capturing));
  if (capturing) {
    return detail::LaunchCaptured<ByValue, BankOf, DeviceBankOf>(stream, table, placement, launch,
                                                                 report);
  }
  int device = 0;
  CONSTMEM_RETURN_IF_ERROR(detail::DeviceOfStream(stream, &device));
  CONSTMEM_RETURN_IF_ERROR(CheckDeviceOrdinal(device));
  ScopedDevice guard(device);
  CONSTMEM_RETURN_IF_ERROR(guard.status());
  switch (placement) {
    case Placement::kByValue:
      return detail::LaunchByValue<ByValue>(device, table, launch);
    case Placement::kConstantBank:
      return detail::LaunchFromConstantBank<BankOf>(stream, device, table, launch, report);
    case Placement::kSharedMemory:
      // Where the driver refuses a parameter of ByValue's size (before CUDA 12.1), the table goes
      // through global memory instead.
      if constexpr (detail::kStagesTables<DeviceBankOf>) {
        if (table.source != SourceKind::kDevice &&
            static_cast<std::size_t>(table.size) <= ByValue::kCapacity &&
            CheckKernelParamBytes(sizeof(ByValue) + kOtherKernelParamBytes, device).ok()) {
          return detail::LaunchByValueStaged<ByValue>(device, table, launch);
        }
      }
      [[fallthrough]];
    case Placement::kGlobalMemory:
      return detail::LaunchFromGlobalMemory<DeviceBankOf>(stream, device, table, placement, launch,
                                                          report);
  }
  return detail::CannotPlace(table, placement);
}

// Changes the host table of a launch captured by LaunchWithTable into the graph's buffer, without
// capturing again: the new values are copied into the buffer on `stream`, ordered before the
// replays launched on `stream` after this call, for every executable of the graph. `captured` is
// the launch's `report->capture`; the new table has the captured number of entries (the kernel's
// other parameters were captured with it), from host or device memory. `stream` must not be
// capturing. A device table read in place is changed by writing into it; a by-value table is part
// of its kernel node, fixed at capture (both are errors here).
template <class Entry>
Status UpdateCapturedTable(const CapturedTable& captured, const TableView<Entry>& table,
                           cudaStream_t stream) {
  if (table.values == nullptr || table.size != captured.size) {
    return InvalidArgument("a captured table of " + std::to_string(captured.size) +
                           " entries takes a new table of as many; got " +
                           std::to_string(table.size));
  }
  if (captured.by_value) {
    return Status(StatusCode::kFailedPrecondition,
                  "a by-value table is part of its kernel node, fixed at capture; capture a "
                  "device table to change it between replays");
  }
  if (captured.buffer == nullptr) {
    return InvalidArgument(
        "the captured launch reads its device table in place: write the new values into it");
  }
  bool capturing = false;
  CONSTMEM_RETURN_IF_ERROR(IsCapturing(stream, &capturing));
  if (capturing) {
    return Status(StatusCode::kFailedPrecondition, "a table update cannot itself be captured");
  }
  int device = 0;
  CONSTMEM_RETURN_IF_ERROR(detail::DeviceOfStream(stream, &device));
  ScopedDevice guard(device);
  CONSTMEM_RETURN_IF_ERROR(guard.status());
  const std::size_t bytes = static_cast<std::size_t>(table.size) * sizeof(Entry);
  if (table.source == SourceKind::kDevice) {
    return CudaStatus(
        cudaMemcpyAsync(captured.buffer, table.values, bytes, cudaMemcpyDeviceToDevice, stream),
        "cudaMemcpyAsync(captured table update)");
  }
  PinnedStagingPool* staging = nullptr;
  CONSTMEM_RETURN_IF_ERROR(StagingPoolFor(device, &staging));
  return staging->CopyToDevice(captured.buffer, table.values, bytes, stream);
}

// Blocks of `Kernel` with `threads` threads each that fit on the whole device at once: the grid of
// a persistent kernel (one wave; a second, partial wave would leave SMs idle at its end). Asked
// once per device and kernel:
//   int blocks = 0;
//   CONSTMEM_RETURN_IF_ERROR(ResidentBlocks<MyKernel<float, Reader>>(256, device, &blocks));
// A kernel with dynamic shared memory passes the most it ever launches with, the same on every
// call. A failed query is an error (and is asked again next time), never a grid of one block.
template <auto Kernel>
Status ResidentBlocks(int threads, int device, int* blocks, std::size_t dynamic_shared_bytes = 0) {
  static std::array<std::atomic<int>, kMaxDevices> cached{};
  CONSTMEM_RETURN_IF_ERROR(CheckDeviceOrdinal(device));
  int value = cached[device].load(std::memory_order_relaxed);
  if (value == 0) {
    CONSTMEM_RETURN_IF_ERROR(detail::QueryResidentBlocks(
        reinterpret_cast<const void*>(Kernel), threads, device, dynamic_shared_bytes, &value));
    cached[device].store(value, std::memory_order_relaxed);
  }
  *blocks = value;
  return Status::Ok();
}

// The most shared memory a block may ask for on `device` (cudaFuncSetAttribute's limit: 64 KiB on
// compute capability 7.5, 99 KiB on 8.6 and 8.9, 163 KiB on 8.0, 227 KiB on 9.0), asked once per
// device: kernels whose tiles come in sizes pick theirs by it.
inline Status MaxSharedBytesPerBlock(int device, std::size_t* bytes) {
  static std::array<std::atomic<int>, kMaxDevices> cached{};
  const bool cacheable = device >= 0 && device < kMaxDevices;
  int value = cacheable ? cached[device].load(std::memory_order_relaxed) : 0;
  if (value == 0) {
    CONSTMEM_RETURN_IF_CUDA_ERROR(
        cudaDeviceGetAttribute(&value, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
        "cudaDeviceGetAttribute(MaxSharedMemoryPerBlockOptin)");
    if (cacheable) cached[device].store(value, std::memory_order_relaxed);
  }
  *bytes = static_cast<std::size_t>(value);
  return Status::Ok();
}

// The multiprocessors of `device`, asked once per device.
inline Status MultiprocessorCount(int device, int* count) {
  static std::array<std::atomic<int>, kMaxDevices> cached{};
  CONSTMEM_RETURN_IF_ERROR(CheckDeviceOrdinal(device));
  int value = cached[device].load(std::memory_order_relaxed);
  if (value == 0) {
    CONSTMEM_RETURN_IF_CUDA_ERROR(
        cudaDeviceGetAttribute(&value, cudaDevAttrMultiProcessorCount, device),
        "cudaDeviceGetAttribute(MultiProcessorCount)");
    cached[device].store(value, std::memory_order_relaxed);
  }
  *count = value;
  return Status::Ok();
}

// A persistent grid for `wanted` blocks of work: no more blocks than fit at once, at least one.
inline dim3 PersistentGrid(std::int64_t wanted, int resident) {
  return dim3(
      static_cast<unsigned>(std::max<std::int64_t>(1, std::min<std::int64_t>(wanted, resident))));
}

}  // namespace constmem
#pragma GCC visibility pop
