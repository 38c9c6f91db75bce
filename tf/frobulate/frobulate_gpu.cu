// Frobulate's CUDA kernels and launcher. Includes the constmem core only: no TensorFlow header
// reaches nvcc, so TensorFlow's CUDA version and ours never meet.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>

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
using FrobulateByValueTable = ByValueTable<std::int32_t, kByValueEntries>;

}  // namespace
}  // namespace ops
}  // namespace constmem

CONSTMEM_DEFINE_BANK(frobulate_bank, std::int32_t, constmem::ops::kSlotEntries,
                     constmem::ops::kSlots);

namespace constmem {
namespace ops {
namespace {

constexpr int kThreadsPerBlock = 256;
// Each thread keeps this many independent sums in flight, so every table entry read (one constant
// load, one conversion) feeds several additions.
constexpr int kElementsPerThread = 8;

template <class T>
struct alignas(16) Chunk {
  T values[kElementsPerThread];
};

// Every lane of a warp reads table[j] with the same j: a constant-cache broadcast. Indexing the
// table by thread (the seed question's cdata[i]) serialises the warp, 57x slower on the H200.
template <class T, class Table, bool kAligned>
__global__ void __launch_bounds__(kThreadsPerBlock)
    FrobulateKernel(const T* __restrict__ data, T* __restrict__ out, std::int64_t count,
                    int table_size, const __grid_constant__ Table table) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t chunks = count / kElementsPerThread;
  for (std::int64_t c = first; c < chunks; c += stride) {
    Chunk<T> chunk;
    if (kAligned) {
      chunk = reinterpret_cast<const Chunk<T>*>(data)[c];
    } else {
#pragma unroll
      for (int e = 0; e < kElementsPerThread; ++e) chunk.values[e] = data[c * kElementsPerThread + e];
    }
#pragma unroll 4
    for (int j = 0; j < table_size; ++j) {
      const T entry = static_cast<T>(table[j]);
#pragma unroll
      for (int e = 0; e < kElementsPerThread; ++e) chunk.values[e] = chunk.values[e] + entry;
    }
    if (kAligned) {
      reinterpret_cast<Chunk<T>*>(out)[c] = chunk;
    } else {
#pragma unroll
      for (int e = 0; e < kElementsPerThread; ++e) out[c * kElementsPerThread + e] = chunk.values[e];
    }
  }
  const std::int64_t tail = chunks * kElementsPerThread + first;
  if (tail < count) {
    T value = data[tail];
    for (int j = 0; j < table_size; ++j) value = value + static_cast<T>(table[j]);
    out[tail] = value;
  }
}

int MultiprocessorCount(int device) {
  static std::array<std::atomic<int>, kMaxDevices> cached{};
  int count = cached[device].load(std::memory_order_relaxed);
  if (count == 0) {
    if (cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
      cudaGetLastError();
      count = 1;
    }
    cached[device].store(count, std::memory_order_relaxed);
  }
  return count;
}

template <class T, class Table>
Status Launch(int device, cudaStream_t stream, const T* data, T* out, std::int64_t count,
              int table_size, const Table& table) {
  const std::int64_t chunks = count / kElementsPerThread;
  const std::int64_t wanted = std::max<std::int64_t>(1, (chunks + kThreadsPerBlock - 1) / kThreadsPerBlock);
  // Enough resident blocks to fill every SM; the grid-stride loop covers the rest.
  const std::int64_t resident = static_cast<std::int64_t>(MultiprocessorCount(device)) * 8;
  const dim3 grid(static_cast<unsigned>(std::min(wanted, resident)));
  const bool aligned = reinterpret_cast<std::uintptr_t>(data) % alignof(Chunk<T>) == 0 &&
                       reinterpret_cast<std::uintptr_t>(out) % alignof(Chunk<T>) == 0;
  if (aligned) {
    FrobulateKernel<T, Table, true><<<grid, kThreadsPerBlock, 0, stream>>>(data, out, count, table_size, table);
  } else {
    FrobulateKernel<T, Table, false><<<grid, kThreadsPerBlock, 0, stream>>>(data, out, count, table_size, table);
  }
  return CudaStatus(cudaGetLastError(), "Frobulate kernel launch");
}

StrategyLimits FrobulateLimits() {
  StrategyLimits limits;
  limits.by_value_bytes = kByValueEntries * sizeof(std::int32_t);
  limits.constant_bank_bytes = kSlotEntries * kSlots * sizeof(std::int32_t);
  return limits;
}

}  // namespace

Placement FrobulatePlacement(std::int64_t table_size, SourceKind source) {
  return ChoosePlacement(static_cast<std::size_t>(table_size) * sizeof(std::int32_t),
                         LocationOf(source), FrobulateLimits());
}

template <class T>
Status LaunchFrobulate(GpuStream stream, const T* data, T* out, std::int64_t count,
                       const GpuTable& table, FrobulateLaunchReport* report) {
  if (table.values == nullptr || table.size < 1 || table.size > kFrobulateMaxTableSize) {
    return InvalidArgument("Frobulate needs a table of 1 to " +
                           std::to_string(kFrobulateMaxTableSize) + " entries; got " +
                           std::to_string(table.size));
  }
  if (count < 0 || count > kFrobulateMaxElements) {
    return InvalidArgument("Frobulate handles at most 2^62 elements; got " + std::to_string(count));
  }
  const Placement placement = FrobulatePlacement(table.size, table.source);
  if (report != nullptr) *report = FrobulateLaunchReport{placement, false};
  if (count == 0) return Status::Ok();

  int device = 0;
  CONSTMEM_RETURN_IF_ERROR(StreamDevice(stream, &device));
  CONSTMEM_RETURN_IF_ERROR(CheckDeviceOrdinal(device));
  ScopedDevice guard(device);
  CONSTMEM_RETURN_IF_ERROR(guard.status());
  const int size = static_cast<int>(table.size);

  switch (placement) {
    case Placement::kByValue: {
      FrobulateByValueTable by_value;
      CONSTMEM_RETURN_IF_ERROR(FillByValueTable(table.values, table.size, &by_value));
      CONSTMEM_RETURN_IF_ERROR(CheckKernelParamBytes(sizeof(by_value) + 32, device));
      Count(Counter::kByValueLaunch);
      return Launch(device, stream, data, out, count, size, by_value);
    }
    case Placement::kConstantBank: {
      const bool dedupe = table.repeats && table.source != SourceKind::kDevice;
      Lease<std::int32_t> lease;
      CONSTMEM_RETURN_IF_ERROR(
          frobulate_bank().Acquire(stream, table.size, dedupe ? table.values : nullptr, &lease));
      CONSTMEM_RETURN_IF_ERROR(lease.Upload(table.values, table.size, table.source));
      if (report != nullptr) report->upload_skipped = lease.upload_skipped();
      Count(Counter::kConstantBankLaunch);
      CONSTMEM_RETURN_IF_ERROR(
          Launch(device, stream, data, out, count, size, frobulate_bank_reader{lease.offset()}));
      return lease.Release();
    }
    case Placement::kGlobalMemory:
      if (table.source != SourceKind::kDevice) break;
      Count(Counter::kGlobalMemoryLaunch);
      return Launch(device, stream, data, out, count, size, GlobalTableReader<std::int32_t>{table.values});
  }
  return InvalidArgument("a host table of " + std::to_string(table.size) +
                         " entries does not fit constant memory");
}

template Status LaunchFrobulate<float>(GpuStream, const float*, float*, std::int64_t,
                                       const GpuTable&, FrobulateLaunchReport*);
template Status LaunchFrobulate<double>(GpuStream, const double*, double*, std::int64_t,
                                        const GpuTable&, FrobulateLaunchReport*);

}  // namespace ops
}  // namespace constmem
