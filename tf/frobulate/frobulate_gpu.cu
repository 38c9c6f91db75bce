// SPDX-License-Identifier: Apache-2.0
// Frobulate's CUDA kernels and launcher. Includes the constmem core only: no TensorFlow header
// reaches nvcc, so TensorFlow's CUDA version and ours never meet.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <type_traits>

#include "constmem/constmem.cuh"
#include "frobulate/frobulate_functor.h"
#include "frobulate/frobulate_launcher.h"

namespace constmem {
namespace ops {
namespace {

// Four slots of 16 KiB: up to four streams use the bank at once with tables of up to 4,096
// entries; a table of up to 16,384 entries takes a run of slots.
constexpr std::size_t kSlotEntries = 4096;
constexpr int kSlots = 4;
// Host-known tables up to this many entries travel as a kernel parameter.
constexpr std::size_t kByValueEntries = kDefaultByValueBytes / sizeof(std::int32_t);
// For float data the host converts the table once (rounding to nearest, as the kernel would), which
// spares every warp one conversion per entry; double tables stay int32, half the parameter bytes.
template <class T>
using ByValueEntry = std::conditional_t<std::is_same<T, float>::value, float, std::int32_t>;
template <class T>
using FrobulateByValueTable = ByValueTable<ByValueEntry<T>, kByValueEntries>;

}  // namespace
}  // namespace ops
}  // namespace constmem

CONSTMEM_DEFINE_BANK(frobulate_bank, std::int32_t, constmem::ops::kSlotEntries,
                     constmem::ops::kSlots);

namespace constmem {
namespace ops {
namespace {

constexpr int kThreadsPerBlock = 256;
// Each thread keeps this many 16-byte vectors (48 floats or 24 doubles) in registers: every table
// entry read (one constant load per warp) then feeds 48 or 24 additions, which keeps the adder
// pipes, not instruction issue, the limit. The launch shape was chosen by measuring variants on the
// H200 (docs/performance.md); the macros exist to repeat that comparison
// (scripts/build-kernel-variants.sh).
#ifndef CONSTMEM_FROBULATE_VECTORS_PER_THREAD
#define CONSTMEM_FROBULATE_VECTORS_PER_THREAD 12
#endif
#ifndef CONSTMEM_FROBULATE_TABLE_UNROLL
#define CONSTMEM_FROBULATE_TABLE_UNROLL 8
#endif
constexpr int kVectorsPerThread = CONSTMEM_FROBULATE_VECTORS_PER_THREAD;
constexpr int kTableUnroll = CONSTMEM_FROBULATE_TABLE_UNROLL;

template <class T>
struct Vector;
template <>
struct Vector<float> {
  using type = float4;
  static constexpr int kLanes = 4;
};
template <>
struct Vector<double> {
  using type = double2;
  static constexpr int kLanes = 2;
};

template <class V, class T>
__device__ __forceinline__ void AddToVector(V& v, T entry) {
  v.x = v.x + entry;
  v.y = v.y + entry;
  if constexpr (Vector<T>::kLanes == 4) {
    v.z = v.z + entry;
    v.w = v.w + entry;
  }
}

// Every lane of a warp reads table[j] with the same j: a constant-cache broadcast. Indexing the
// table by thread (the seed question's cdata[i]) serialises the warp (docs/performance.md).
// Tiles of kThreadsPerBlock x kVectorsPerThread vectors are read and written fully coalesced
// (vector k of every thread is contiguous across the block) and visited grid-stride, so that
// concurrent blocks stream through neighbouring memory; the elements after the last whole tile (and
// everything, for unaligned pointers) go one per thread. `out` may be `data` (TensorFlow forwards
// the input buffer when nothing else reads it): every element is read before the same thread
// writes it, so the pointers carry no __restrict__.
template <class T, class Table, bool kVectorized>
__global__ void __launch_bounds__(kThreadsPerBlock)
    FrobulateKernel(const T* data, T* out, std::int64_t count, int table_size,
                    const __grid_constant__ Table table) {
  using V = typename Vector<T>::type;
  constexpr std::int64_t kTileVectors =
      static_cast<std::int64_t>(kThreadsPerBlock) * kVectorsPerThread;
  constexpr std::int64_t kTileElements = kTileVectors * Vector<T>::kLanes;
  const std::int64_t tiles = kVectorized ? count / kTileElements : 0;
  for (std::int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const std::int64_t first = tile * kTileVectors + threadIdx.x;
    V v[kVectorsPerThread];
#pragma unroll
    for (int k = 0; k < kVectorsPerThread; ++k) {
      v[k] = reinterpret_cast<const V*>(data)[first + k * kThreadsPerBlock];
    }
#pragma unroll kTableUnroll
    for (int j = 0; j < table_size; ++j) {
      const T entry = static_cast<T>(table[j]);
#pragma unroll
      for (int k = 0; k < kVectorsPerThread; ++k) AddToVector(v[k], entry);
    }
#pragma unroll
    for (int k = 0; k < kVectorsPerThread; ++k) {
      reinterpret_cast<V*>(out)[first + k * kThreadsPerBlock] = v[k];
    }
  }
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i =
           tiles * kTileElements + static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += stride) {
    T value = data[i];
    for (int j = 0; j < table_size; ++j) value = value + static_cast<T>(table[j]);
    out[i] = value;
  }
}

// Blocks of one kernel instantiation that fit on the whole device at once, computed once per
// device and instantiation.
template <class T, class Table, bool kAligned>
int ResidentBlocks(int device) {
  static std::array<std::atomic<int>, kMaxDevices> cached{};
  const auto kernel = FrobulateKernel<T, Table, kAligned>;
  int blocks = cached[device].load(std::memory_order_relaxed);
  if (blocks == 0) {
    int per_sm = 0, sms = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreadsPerBlock, 0) !=
            cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
      cudaGetLastError();
      per_sm = 1;
      sms = 1;
    }
    blocks = std::max(1, per_sm * sms);
    cached[device].store(blocks, std::memory_order_relaxed);
  }
  return blocks;
}

template <class T, class Table>
Status Launch(int device, cudaStream_t stream, const T* data, T* out, std::int64_t count,
              int table_size, const Table& table) {
  constexpr std::int64_t kTileElements =
      static_cast<std::int64_t>(kThreadsPerBlock) * kVectorsPerThread * Vector<T>::kLanes;
  const bool aligned = reinterpret_cast<std::uintptr_t>(data) % 16 == 0 &&
                       reinterpret_cast<std::uintptr_t>(out) % 16 == 0;
  // Whole tiles, or for small counts one element per thread.
  const std::int64_t wanted = std::max(
      aligned ? count / kTileElements : 0,
      ((aligned ? count % kTileElements : count) + kThreadsPerBlock - 1) / kThreadsPerBlock);
  // One wave of persistent blocks: a second, partial wave would leave SMs idle at the end.
  const std::int64_t resident =
      aligned ? ResidentBlocks<T, Table, true>(device) : ResidentBlocks<T, Table, false>(device);
  const dim3 grid(static_cast<unsigned>(std::max<std::int64_t>(1, std::min(wanted, resident))));
  if (aligned) {
    FrobulateKernel<T, Table, true>
        <<<grid, kThreadsPerBlock, 0, stream>>>(data, out, count, table_size, table);
  } else {
    FrobulateKernel<T, Table, false>
        <<<grid, kThreadsPerBlock, 0, stream>>>(data, out, count, table_size, table);
  }
  return CudaStatus(CONSTMEM_CUDA_CALL(kKernelLaunch, cudaGetLastError()),
                    "Frobulate kernel launch");
}

StrategyLimits FrobulateLimits() {
  StrategyLimits limits;
  limits.by_value_bytes = kByValueEntries * sizeof(std::int32_t);
  limits.constant_bank_bytes = kSlotEntries * kSlots * sizeof(std::int32_t);
  // Each table read feeds 48 additions here, so a warp-uniform read from L1 costs what a constant
  // cache read costs, and up to 1,024 entries the device-to-device copy measured slower than
  // reading the table where it is (docs/performance.md, placement matrix).
  limits.device_in_place_bytes = kByValueEntries * sizeof(std::int32_t);
  return limits;
}

}  // namespace

Placement FrobulatePlacement(std::int64_t table_size, SourceKind source) {
  return ChoosePlacement(static_cast<std::size_t>(table_size) * sizeof(std::int32_t),
                         LocationOf(source), FrobulateLimits());
}

template <class T>
Status LaunchFrobulateWithPlacement(GpuStream stream, const T* data, T* out, std::int64_t count,
                                    const GpuTable& table, Placement placement,
                                    bool* upload_skipped) {
  if (table.values == nullptr || table.size < 1 || table.size > kFrobulateMaxTableSize) {
    return InvalidArgument("Frobulate needs a table of 1 to " +
                           std::to_string(kFrobulateMaxTableSize) + " entries; got " +
                           std::to_string(table.size));
  }
  if (count < 0 || count > kFrobulateMaxElements) {
    return InvalidArgument("Frobulate handles at most 2^62 elements; got " + std::to_string(count));
  }
  if (count == 0) return Status::Ok();

  int device = 0;
  CONSTMEM_RETURN_IF_ERROR(StreamDevice(stream, &device));
  CONSTMEM_RETURN_IF_ERROR(CheckDeviceOrdinal(device));
  ScopedDevice guard(device);
  CONSTMEM_RETURN_IF_ERROR(guard.status());
  const int size = static_cast<int>(table.size);
  const bool host = table.source != SourceKind::kDevice;

  switch (placement) {
    case Placement::kByValue: {
      if (!host) break;
      FrobulateByValueTable<T> by_value;
      CONSTMEM_RETURN_IF_ERROR(FillByValueTable(table.values, table.size, &by_value));
      CONSTMEM_RETURN_IF_ERROR(CheckKernelParamBytes(sizeof(by_value) + 32, device));
      Count(Counter::kByValueLaunch);
      return Launch(device, stream, data, out, count, size, by_value);
    }
    case Placement::kConstantBank: {
      const bool dedupe = table.repeats && host;
      Lease<std::int32_t> lease;
      CONSTMEM_RETURN_IF_ERROR(
          frobulate_bank().Acquire(stream, table.size, dedupe ? table.values : nullptr, &lease));
      CONSTMEM_RETURN_IF_ERROR(lease.Upload(table.values, table.size, table.source));
      if (upload_skipped != nullptr) *upload_skipped = lease.upload_skipped();
      Count(Counter::kConstantBankLaunch);
      CONSTMEM_RETURN_IF_ERROR(
          Launch(device, stream, data, out, count, size, frobulate_bank_reader{lease.offset()}));
      return lease.Release();
    }
    case Placement::kGlobalMemory:
      if (host) break;
      Count(Counter::kGlobalMemoryLaunch);
      return Launch(device, stream, data, out, count, size,
                    GlobalTableReader<std::int32_t>{table.values});
  }
  return InvalidArgument(std::string("a ") + (host ? "host" : "device") + " table of " +
                         std::to_string(table.size) + " entries cannot be placed in " +
                         PlacementName(placement));
}

template <class T>
Status LaunchFrobulate(GpuStream stream, const T* data, T* out, std::int64_t count,
                       const GpuTable& table, FrobulateLaunchReport* report) {
  const Placement placement = FrobulatePlacement(table.size, table.source);
  bool skipped = false;
  const Status status =
      LaunchFrobulateWithPlacement(stream, data, out, count, table, placement, &skipped);
  if (report != nullptr) *report = FrobulateLaunchReport{placement, skipped};
  return status;
}

#define CONSTMEM_INSTANTIATE_FROBULATE(T)                                                    \
  template Status LaunchFrobulate<T>(GpuStream, const T*, T*, std::int64_t, const GpuTable&, \
                                     FrobulateLaunchReport*);                                \
  template Status LaunchFrobulateWithPlacement<T>(GpuStream, const T*, T*, std::int64_t,     \
                                                  const GpuTable&, Placement, bool*);
CONSTMEM_INSTANTIATE_FROBULATE(float)
CONSTMEM_INSTANTIATE_FROBULATE(double)
#undef CONSTMEM_INSTANTIATE_FROBULATE

}  // namespace ops
}  // namespace constmem
