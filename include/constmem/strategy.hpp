// SPDX-License-Identifier: Apache-2.0
// Where a table should live, given its size, where it comes from and how the kernel reads it.
// Host-only: no CUDA include, so framework code and CPU tests can use it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include "constmem/visibility.hpp"

// Private to each library that compiles it (visibility.hpp).
#pragma GCC visibility push(hidden)
namespace constmem {

// The __constant__ space a module may declare (CUDA Programming Guide, "Device Memory Space
// Specifiers"); every bank of one translation unit shares it.
constexpr std::size_t kConstantMemoryBytes = 64 * 1024;
// Kernel parameters up to this size cost nothing measurable beyond the launch, while much larger
// ones add to every launch (docs/performance.md, launch cost), so this is where by-value stops
// paying.
constexpr std::size_t kDefaultByValueBytes = 4 * 1024;
// Largest kernel parameter list with CUDA 12.1+ on Volta and newer; 4,096 bytes before that.
constexpr std::size_t kMaxKernelParamBytes = 32764;
constexpr std::size_t kLegacyKernelParamBytes = 4096;
// The most entries a table of a constmem op takes, from any source: 2^20 (4 MiB of float32, 8 MiB
// of float64). A table larger than its op's constant bank is read from global memory (a host table
// is first copied into a stream-ordered device buffer): a matter of speed, never an error.
constexpr std::int64_t kMaxTableEntries = std::int64_t{1} << 20;

// A launch of at most this many output elements copies no table it can avoid (ChoosePlacement):
// a copy is a stream operation with a host call of its own, which costs more than such a kernel,
// a few microseconds long, can gain from the constant cache or an L1 hit (at most a fifth of its
// time: the placement matrix, docs/performance.md).
constexpr std::int64_t kSmallLaunchElements = std::int64_t{1} << 16;
// The launch size a placement is asked for when the launch is not known: a large one.
constexpr std::int64_t kUnknownLaunchElements = std::numeric_limits<std::int64_t>::max();

// The output elements of `rows` rows of `per_row`, or kUnknownLaunchElements where either is
// negative or the product overflows (a shape its launcher refuses after choosing).
inline std::int64_t LaunchElements(std::int64_t rows, std::int64_t per_row) {
  std::int64_t product = 0;
  if (rows < 0 || per_row < 0 || __builtin_mul_overflow(rows, per_row, &product)) {
    return kUnknownLaunchElements;
  }
  return product;
}

// sizeof(ByValueTable<T, capacity>) (by_value.cuh), padding included: an int count, the values at
// T's alignment, the whole rounded up to the struct's alignment. What the parameter limit applies
// to.
template <class T>
constexpr std::size_t ByValueTableBytes(std::size_t capacity) {
  constexpr std::size_t struct_align = alignof(T) > alignof(int) ? alignof(T) : alignof(int);
  constexpr std::size_t values_offset = (sizeof(int) + alignof(T) - 1) / alignof(T) * alignof(T);
  return (values_offset + sizeof(T) * capacity + struct_align - 1) / struct_align * struct_align;
}

enum class TableLocation { kHost, kDevice };

// Where the bytes of an upload come from; pageable host memory goes through pinned staging.
enum class SourceKind { kDevice, kPinnedHost, kPageableHost };

inline TableLocation LocationOf(SourceKind source) {
  return source == SourceKind::kDevice ? TableLocation::kDevice : TableLocation::kHost;
}

// How a kernel's lanes read the table. Constant memory serves one address per cycle to a warp:
// a broadcast when every lane reads the same entry, serialised when lanes read different ones.
enum class TableAccess {
  kUniform,    // every lane of a warp reads the same entry at a time (a walk over the table)
  kDivergent,  // lanes read entries computed from their data (a lookup)
  // A run of consecutive outputs shares one entry (a scale per block of 64 outputs): a warp reads
  // one or a few neighbouring entries, and each entry is read only by the warps of its run. No
  // reuse for a cache to keep, so nothing is copied that need not be: a device table is read in
  // place (the warp's lanes merge into one or two sectors of one L1 request), a host table goes by
  // value (a broadcast or two from the parameter bank) or, larger, is copied once into global
  // memory. Neither a constant bank (a copy of the whole table per call) nor staging (every block
  // would copy the whole table to read its slice).
  kPerBlock,
};

enum class Placement {
  kByValue,       // a __grid_constant__ kernel parameter: no copy at all, constant bank 0
  kConstantBank,  // a slot of a __constant__ bank, filled by an asynchronous copy
  kGlobalMemory,  // read through the read-only cache; the fallback for any size
  kSharedMemory,  // copied by each block into shared memory (from global memory or from its
                  // by-value parameter), then read there
};

inline const char* PlacementName(Placement placement) {
  switch (placement) {
    case Placement::kByValue:
      return "by_value";
    case Placement::kConstantBank:
      return "constant_bank";
    case Placement::kGlobalMemory:
      return "global_memory";
    case Placement::kSharedMemory:
      return "shared_memory";
  }
  return "unknown";
}

struct CONSTMEM_VISIBLE_TYPE StrategyLimits {
  std::size_t by_value_bytes = kDefaultByValueBytes;
  std::size_t constant_bank_bytes = kConstantMemoryBytes;
  // Device tables up to this size are read in place from global memory instead of being copied
  // into a bank. Zero (the default) always copies. Worth raising for kernels that do enough work
  // per table read that the constant cache cannot beat L1 (measure: kernel_bench's matrix): the
  // copy then only adds a stream operation and its host cost.
  std::size_t device_in_place_bytes = 0;
  // Divergent reads: tables up to this size are staged into each block's shared memory (32 banks
  // serve 32 different addresses a cycle), larger ones read from global memory: a staged table
  // of 128 KiB leaves one block per SM. 64 KiB is also the least any supported GPU lets a block
  // have. Device tables up to divergent_global_bytes are read from global memory unstaged: one to
  // eight cache lines serve a warp from L1 as fast (placement_bench, docs/performance.md). A host
  // table that fits by value is staged from its parameter instead where it fits
  // shared_memory_bytes: a copy to the device costs a call more than the staging.
  std::size_t shared_memory_bytes = 64 * 1024;
  std::size_t divergent_global_bytes = 1024;
  // Launches of at most this many output elements copy no table they can avoid. An op whose
  // kernel runs through this many elements in a few microseconds, or which copies several tables
  // a call, raises it to where the copies' cost is small beside the kernel's time
  // (SeparableFilter, FirFilter).
  std::int64_t small_launch_elements = kSmallLaunchElements;
};

// A device-resident table is never passed by value: that would need a device-to-host copy and a
// host wait. Everything larger than the bank is read from global memory. A table read at
// divergent indices goes to shared memory or global memory from any source (a host table larger
// than the by-value size is then uploaded into a device buffer: LaunchWithTable's DeviceBankOf).
// A table read per block of outputs (kPerBlock) goes by value from the host up to the by-value
// size, and otherwise to global memory (a device table in place), at any launch size.
//
// A launch of at most limits.small_launch_elements output elements (`launch_elements`; unknown: a
// large launch) copies nothing it can avoid: a device table bound for the bank is read in place,
// and a host table small enough to go by value does so even where the lanes read it at divergent
// indices (the parameter bank then serves them one address at a time, which costs such a launch
// less than staging it). In a larger launch such a table still travels by value, and each block
// stages it from the parameter into shared memory (kSharedMemory): no copy to the device at any
// launch size.
inline Placement ChoosePlacement(std::size_t table_bytes, TableLocation location,
                                 const StrategyLimits& limits = StrategyLimits(),
                                 TableAccess access = TableAccess::kUniform,
                                 std::int64_t launch_elements = kUnknownLaunchElements) {
  const bool small_launch = launch_elements <= limits.small_launch_elements;
  const bool fits_by_value =
      location == TableLocation::kHost && table_bytes <= limits.by_value_bytes;
  if (access == TableAccess::kPerBlock) {
    return fits_by_value ? Placement::kByValue : Placement::kGlobalMemory;
  }
  if (access == TableAccess::kDivergent) {
    if (fits_by_value && small_launch) return Placement::kByValue;
    if (fits_by_value && table_bytes <= limits.shared_memory_bytes) return Placement::kSharedMemory;
    if (table_bytes <= limits.divergent_global_bytes) return Placement::kGlobalMemory;
    return table_bytes <= limits.shared_memory_bytes ? Placement::kSharedMemory
                                                     : Placement::kGlobalMemory;
  }
  if (fits_by_value) return Placement::kByValue;
  if (location == TableLocation::kDevice &&
      (small_launch || table_bytes <= limits.device_in_place_bytes)) {
    return Placement::kGlobalMemory;
  }
  if (table_bytes <= limits.constant_bank_bytes) return Placement::kConstantBank;
  return Placement::kGlobalMemory;
}

// The same for a table of `count` entries of T from `source`: what an op's launcher asks, with
// the launch's output elements where it knows them.
template <class T>
Placement ChoosePlacementFor(std::int64_t count, SourceKind source, const StrategyLimits& limits,
                             TableAccess access = TableAccess::kUniform,
                             std::int64_t launch_elements = kUnknownLaunchElements) {
  return ChoosePlacement(static_cast<std::size_t>(count) * sizeof(T), LocationOf(source), limits,
                         access, launch_elements);
}

}  // namespace constmem
#pragma GCC visibility pop
