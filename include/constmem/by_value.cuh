// SPDX-License-Identifier: Apache-2.0
// Tables passed by value as a __grid_constant__ kernel parameter. The launch copies the parameter
// into constant bank 0 of the launch itself, so there is no upload, no slot and no hazard: every
// launch carries its own table. Up to about 4 KiB it costs nothing beyond the launch.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <string>
#include <type_traits>

#include "constmem/cuda_support.cuh"
#include "constmem/strategy.hpp"
#include "constmem/visibility.hpp"

// Private to each library that compiles it (visibility.hpp).
#pragma GCC visibility push(hidden)
namespace constmem {

template <class T, std::size_t Capacity>
struct CONSTMEM_VISIBLE_TYPE ByValueTable {
  static_assert(Capacity > 0, "empty by-value table");
  static_assert(ByValueTableBytes<T>(Capacity) <= kMaxKernelParamBytes,
                "a by-value table, padding included, must fit the 32,764-byte parameter limit");
  using Entry = T;
  static constexpr std::size_t kCapacity = Capacity;

  int size;
  T values[Capacity];

  CONSTMEM_HIDDEN __host__ __device__ __forceinline__ T operator[](int i) const {
    return values[i];
  }
};

// A by-value table of the default size, kDefaultByValueBytes of values.
template <class T>
using DefaultByValueTable = ByValueTable<T, kDefaultByValueBytes / sizeof(T)>;

// Copies host values into a by-value table, converting each to the table's element type (so that
// a kernel can read ready-made values: a float table spares every warp one conversion per entry).
template <class T, std::size_t Capacity, class Source>
Status FillByValueTable(const Source* host_values, std::size_t count,
                        ByValueTable<T, Capacity>* table) {
  static_assert(sizeof(ByValueTable<T, Capacity>) == ByValueTableBytes<T>(Capacity),
                "ByValueTableBytes must describe the layout the compiler chose");
  if (count == 0 || count > Capacity) {
    return InvalidArgument("a by-value table holds 1 to " + std::to_string(Capacity) +
                           " elements; got " + std::to_string(count));
  }
  table->size = static_cast<int>(count);
  if constexpr (std::is_same<T, Source>::value) {
    std::memcpy(table->values, host_values, count * sizeof(T));
  } else {
    for (std::size_t i = 0; i < count; ++i) table->values[i] = static_cast<T>(host_values[i]);
  }
  return Status::Ok();
}

// Parameters above 4,096 bytes need CUDA 12.1 or newer on both sides and a Volta or newer GPU.
// The driver and the device do not change while the process runs, so each device is asked once.
inline Status CheckKernelParamBytes(std::size_t param_bytes, int device) {
  if (param_bytes <= kLegacyKernelParamBytes) return Status::Ok();
  if (param_bytes > kMaxKernelParamBytes) {
    return InvalidArgument("kernel parameters of " + std::to_string(param_bytes) +
                           " bytes exceed the limit of " + std::to_string(kMaxKernelParamBytes));
  }
  enum : int { kUnknown = 0, kSupported = 1, kUnsupported = 2 };
  static std::array<std::atomic<int>, kMaxDevices> support{};
  const bool cached = device >= 0 && device < kMaxDevices;
  int known = cached ? support[device].load(std::memory_order_relaxed) : kUnknown;
  if (known == kUnknown) {
    int driver = 0;
    int major = 0;
    CONSTMEM_RETURN_IF_CUDA_ERROR(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
    CONSTMEM_RETURN_IF_CUDA_ERROR(
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device),
        "cudaDeviceGetAttribute");
    known = driver >= 12010 && CUDART_VERSION >= 12010 && major >= 7 ? kSupported : kUnsupported;
    if (cached) support[device].store(known, std::memory_order_relaxed);
  }
  if (known == kUnsupported) {
    return Status(StatusCode::kFailedPrecondition,
                  "kernel parameters over 4,096 bytes need CUDA 12.1+ and compute capability 7.0+");
  }
  return Status::Ok();
}

// The fallback reader for tables of any size that stay in global memory.
template <class T>
struct CONSTMEM_VISIBLE_TYPE GlobalTableReader {
  const T* values;
  __device__ __forceinline__ T operator[](int i) const { return __ldg(values + i); }
};

}  // namespace constmem
#pragma GCC visibility pop
