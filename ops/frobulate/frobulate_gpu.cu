// SPDX-License-Identifier: Apache-2.0
// Frobulate's CUDA kernels and launcher. Includes the constmem core only: no TensorFlow header
// reaches nvcc, so TensorFlow's CUDA version and ours never meet.
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "constmem/constmem.cuh"
#include "constmem/dispatch.cuh"
#include "constmem/elementwise.cuh"
#include "frobulate/frobulate_functor.h"
#include "frobulate/frobulate_launcher.h"

// Four slots of 16 KiB: up to four streams use the bank at once with tables of up to 4,096
// entries; a table of up to 16,384 entries takes a run of slots.
CONSTMEM_DEFINE_BANK(frobulate_table, std::int32_t, 4096, 4);

namespace constmem {
namespace ops {
namespace {

// Host-known tables up to this many entries travel as a kernel parameter.
constexpr std::size_t kByValueEntries = kDefaultByValueBytes / sizeof(std::int32_t);
// For float data the host converts the table once (rounding to nearest, as the kernel would), which
// spares every warp one conversion per entry; double tables stay int32, half the parameter bytes.
template <class T>
using ByValueEntry = std::conditional_t<std::is_same<T, float>::value, float, std::int32_t>;
template <class T>
using FrobulateByValueTable = ByValueTable<ByValueEntry<T>, kByValueEntries>;

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

// out = (((x + table[0]) + table[1]) + ... ), in T, as FrobulateElement (frobulate_functor.h).
template <class T>
struct FrobulateStep {
  using State = T;
  static constexpr int kVectorsPerThread = CONSTMEM_FROBULATE_VECTORS_PER_THREAD;
  static constexpr int kTableUnroll = CONSTMEM_FROBULATE_TABLE_UNROLL;
  __device__ __forceinline__ static T Start(T x, T entry) { return x + entry; }
  __device__ __forceinline__ static void Step(T& sum, T entry) { sum = sum + entry; }
  __device__ __forceinline__ static T Finish(T sum) { return sum; }
};

StrategyLimits FrobulateLimits() {
  StrategyLimits limits;
  limits.by_value_bytes = kByValueEntries * sizeof(std::int32_t);
  limits.constant_bank_bytes = frobulate_table_bank::kBytes;
  // Each table read feeds 48 additions here, so a warp-uniform read from L1 costs what a constant
  // cache read costs, and up to 1,024 entries the device-to-device copy measured slower than
  // reading the table where it is (docs/performance.md, placement matrix).
  limits.device_in_place_bytes = kByValueEntries * sizeof(std::int32_t);
  return limits;
}

}  // namespace

Placement FrobulatePlacement(std::int64_t table_size, SourceKind source,
                             std::int64_t launch_elements) {
  return ChoosePlacementFor<std::int32_t>(table_size, source, FrobulateLimits(),
                                          TableAccess::kUniform, launch_elements);
}

template <class T>
Status LaunchFrobulateWithPlacement(GpuStream stream, const T* data, T* out, std::int64_t count,
                                    const TableView<std::int32_t>& table, Placement placement,
                                    LaunchReport* report) {
  if (table.values == nullptr || table.size < 1 || table.size > kFrobulateMaxTableSize) {
    return InvalidArgument("Frobulate needs a table of 1 to " +
                           std::to_string(kFrobulateMaxTableSize) + " entries; got " +
                           std::to_string(table.size));
  }
  if (count < 0 || count > kFrobulateMaxElements) {
    return InvalidArgument("Frobulate handles at most 2^62 elements; got " + std::to_string(count));
  }
  if (count == 0) {
    if (report != nullptr) *report = LaunchReport(placement);
    return Status::Ok();
  }
  return LaunchWithTable<FrobulateByValueTable<T>, frobulate_table_bank>(
      stream, table, placement,
      [&](int device, const auto& reader) {
        return LaunchElementwiseTable<FrobulateStep<T>>(device, stream, data, out, count,
                                                        static_cast<int>(table.size), reader);
      },
      report);
}

template <class T>
Status LaunchFrobulate(GpuStream stream, const T* data, T* out, std::int64_t count,
                       const TableView<std::int32_t>& table, LaunchReport* report) {
  return LaunchFrobulateWithPlacement(stream, data, out, count, table,
                                      FrobulatePlacement(table.size, table.source, count), report);
}

#define CONSTMEM_INSTANTIATE_FROBULATE(T)                                                    \
  template Status LaunchFrobulate<T>(GpuStream, const T*, T*, std::int64_t,                  \
                                     const TableView<std::int32_t>&, LaunchReport*);         \
  template Status LaunchFrobulateWithPlacement<T>(GpuStream, const T*, T*, std::int64_t,     \
                                                  const TableView<std::int32_t>&, Placement, \
                                                  LaunchReport*);
CONSTMEM_INSTANTIATE_FROBULATE(float)
CONSTMEM_INSTANTIATE_FROBULATE(double)
#undef CONSTMEM_INSTANTIATE_FROBULATE

}  // namespace ops
}  // namespace constmem
