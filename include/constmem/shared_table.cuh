// SPDX-License-Identifier: Apache-2.0
// Tables staged into shared memory, for kernels whose lanes read the table at divergent indices
// (Placement::kSharedMemory). LaunchWithTable hands such a kernel a SharedTableSource, the table's
// address in global memory, or for a host table that fits by value a ByValueSharedSource, the
// table itself as a parameter; the kernel copies it into its dynamic shared memory once per block
// and reads it there. One kernel body serves every placement:
//
//   template <class T, class Table>
//   __global__ void LookupKernel(const int* index, T* out, std::int64_t n, int size,
//                                const __grid_constant__ Table table) {
//     extern __shared__ __align__(16) unsigned char staging[];
//     const auto values = constmem::StageTable(table, size, staging);  // the reader to use
//     for (std::int64_t i = ...; i < n; i += stride) out[i] = values[index[i]];
//   }
//
// launched with StagedTableBytes(table, size) bytes of dynamic shared memory (zero for the other
// readers, for which StageTable returns the reader itself) and a grid from SharedResidentBlocks.
//
// A table larger than a block's shared memory may be staged in part: a SharedPrefixSource stages
// its first `staged` entries and reads the rest from global memory, one load a read from either.
// A lookup into a table that just misses the shared-memory budget then still reads nearly all of
// it from shared memory. LaunchWithTable never hands one over: the launcher of a table placed in
// global memory (Placement::kGlobalMemory, where the table stays) wraps the GlobalTableReader it
// is given, `SharedPrefixSource<T>{reader.values, staged}`.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "constmem/cuda_support.cuh"
#include "constmem/visibility.hpp"

// Private to each library that compiles it (visibility.hpp).
#pragma GCC visibility push(hidden)
namespace constmem {

// A table in global memory that the kernel stages into shared memory before reading it.
template <class T>
struct CONSTMEM_VISIBLE_TYPE SharedTableSource {
  using Entry = T;
  const T* values;
};

// A host table passed by value (a ByValueTable) that the kernel stages into shared memory: a small
// host table read at divergent indices by a launch too large to read it from the parameter bank,
// which serves a warp one address at a time. No copy to the device.
template <class ByValue>
struct CONSTMEM_VISIBLE_TYPE ByValueSharedSource {
  using Entry = typename ByValue::Entry;
  ByValue table;
};

// A table in global memory of which the kernel stages the first `staged` entries into shared
// memory and reads the rest where they are: a lookup into a table larger than the shared memory a
// block should take.
template <class T>
struct CONSTMEM_VISIBLE_TYPE SharedPrefixSource {
  using Entry = T;
  const T* values;
  int staged;
};

// A table a block staged into its shared memory.
template <class T>
struct CONSTMEM_VISIBLE_TYPE SharedTableReader {
  const T* values;
  __device__ __forceinline__ T operator[](int i) const { return values[i]; }
};

// A table whose first `staged` entries a block staged into its shared memory. A compare picks
// the one load a read takes, each within its own range: shared memory below `staged`, global
// memory from there.
template <class T>
struct CONSTMEM_VISIBLE_TYPE SharedPrefixReader {
  const T* shared;
  const T* global;
  int staged;
  __device__ __forceinline__ T operator[](int i) const {
    return i < staged ? shared[i] : __ldg(global + i);
  }
};

template <class Table>
struct IsSharedTableSource : std::false_type {};
template <class T>
struct IsSharedTableSource<SharedTableSource<T>> : std::true_type {};
template <class ByValue>
struct IsSharedTableSource<ByValueSharedSource<ByValue>> : std::true_type {};
template <class T>
struct IsSharedTableSource<SharedPrefixSource<T>> : std::true_type {};

// The dynamic shared memory a launch with `table` needs for `size` entries.
template <class Table>
constexpr std::size_t StagedTableBytes(const Table&, int size) {
  if constexpr (IsSharedTableSource<Table>::value) {
    return static_cast<std::size_t>(size) * sizeof(typename Table::Entry);
  } else {
    return 0;
  }
}
template <class T>
constexpr std::size_t StagedTableBytes(const SharedPrefixSource<T>& table, int size) {
  return static_cast<std::size_t>(std::min(table.staged, size)) * sizeof(T);
}

// Any reader but the sources above is read where it is.
template <class Table>
__device__ __forceinline__ const Table& StageTable(const Table& table, int, unsigned char*) {
  return table;
}

namespace detail {

// Copies `count` entries from global memory into `staging` (16-byte aligned dynamic shared memory)
// with the whole block, in 16-byte pieces where the source is aligned, and waits for the copy.
template <class T>
__device__ __forceinline__ T* StageEntries(const T* values, int count, unsigned char* staging) {
  T* shared = reinterpret_cast<T*>(staging);
  const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(T);
  int first_scalar = 0;
  if (reinterpret_cast<std::uintptr_t>(values) % 16 == 0) {
    const int pieces = static_cast<int>(bytes / 16);
    const uint4* from = reinterpret_cast<const uint4*>(values);
    uint4* to = reinterpret_cast<uint4*>(shared);
    for (int i = threadIdx.x; i < pieces; i += blockDim.x) to[i] = __ldg(from + i);
    first_scalar = static_cast<int>(pieces * 16 / sizeof(T));
  }
  for (int i = first_scalar + threadIdx.x; i < count; i += blockDim.x) {
    shared[i] = __ldg(values + i);
  }
  __syncthreads();
  return shared;
}

}  // namespace detail

// Copies the table into `staging` (16-byte aligned dynamic shared memory) with the whole block
// and waits for the copy. Every thread of the block must call it.
template <class T>
__device__ __forceinline__ SharedTableReader<T> StageTable(const SharedTableSource<T>& table,
                                                           int size, unsigned char* staging) {
  return {detail::StageEntries(table.values, size, staging)};
}

// Copies the table's first entries into `staging` the same way; the reader takes the rest from
// global memory. Every thread of the block must call it.
template <class T>
__device__ __forceinline__ SharedPrefixReader<T> StageTable(const SharedPrefixSource<T>& table,
                                                            int size, unsigned char* staging) {
  const int staged = min(table.staged, size);
  return {detail::StageEntries(table.values, staged, staging), table.values, staged};
}

// Copies a by-value table from the kernel's parameter into `staging` with the whole block and
// waits for the copy. Every thread of the block must call it.
template <class ByValue>
__device__ __forceinline__ SharedTableReader<typename ByValue::Entry> StageTable(
    const ByValueSharedSource<ByValue>& table, int size, unsigned char* staging) {
  using T = typename ByValue::Entry;
  T* shared = reinterpret_cast<T*>(staging);
  for (int i = threadIdx.x; i < size; i += blockDim.x) shared[i] = table.table.values[i];
  __syncthreads();
  return {shared};
}

// Blocks of `Kernel` with `threads` threads and `shared_bytes` of dynamic shared memory that fit
// on the whole device at once (a persistent grid). Allows the kernel the device's whole opt-in
// shared memory when it needs more than the default 48 KiB; asked once per device and KiB. More
// than the device allows a block is an InvalidArgument (the caller places the table elsewhere
// first).
template <auto Kernel>
Status SharedResidentBlocks(int threads, int device, std::size_t shared_bytes, int* blocks) {
  constexpr int kMaxKiB = 256;
  static std::array<std::array<std::atomic<int>, kMaxKiB + 1>, kMaxDevices> cached{};
  static std::array<std::atomic<bool>, kMaxDevices> opted_in{};
  CONSTMEM_RETURN_IF_ERROR(CheckDeviceOrdinal(device));
  const std::size_t kib = (shared_bytes + 1023) / 1024;
  if (kib > kMaxKiB) {
    return InvalidArgument(std::to_string(shared_bytes) + " bytes of shared memory per block");
  }
  int value = cached[device][kib].load(std::memory_order_relaxed);
  if (value == 0) {
    int opt_in_bytes = 0;
    CONSTMEM_RETURN_IF_CUDA_ERROR(
        cudaDeviceGetAttribute(&opt_in_bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
        "cudaDeviceGetAttribute(MaxSharedMemoryPerBlockOptin)");
    if (kib * 1024 > static_cast<std::size_t>(opt_in_bytes)) {
      return InvalidArgument("a table of " + std::to_string(shared_bytes) +
                             " bytes does not fit the " + std::to_string(opt_in_bytes) +
                             " bytes of shared memory a block may have on device " +
                             std::to_string(device));
    }
    // Above 48 KiB a kernel must be allowed more first.
    if (kib > 48 && !opted_in[device].load(std::memory_order_relaxed)) {
      CONSTMEM_RETURN_IF_CUDA_ERROR(
          cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, opt_in_bytes),
          "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)");
      opted_in[device].store(true, std::memory_order_relaxed);
    }
    CONSTMEM_RETURN_IF_ERROR(detail::QueryResidentBlocks(reinterpret_cast<const void*>(Kernel),
                                                         threads, device, kib * 1024, &value));
    cached[device][kib].store(value, std::memory_order_relaxed);
  }
  *blocks = value;
  return Status::Ok();
}

}  // namespace constmem
#pragma GCC visibility pop
