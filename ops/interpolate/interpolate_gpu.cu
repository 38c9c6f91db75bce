// SPDX-License-Identifier: Apache-2.0
// Interpolate's CUDA launcher (the kernel is interpolate_kernel.cuh's). Every lane reads the knots
// at an index computed from its own x, so the table goes where divergent reads are fast: each
// block's shared memory (32 banks, 32 addresses a cycle) or, for tables too large to stage, global
// memory through L1, with the first 64 KiB of a float32 table staged all the same. A host table of
// up to 4 KiB travels by value and each block stages it from the parameter; larger host tables
// reach global memory through a bank of it, with the same hazard tracking as a constant bank. No
// framework header reaches nvcc.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "constmem/constmem.cuh"
#include "constmem/numeric.hpp"
#include "constmem/shared_table.cuh"
#include "interpolate/interpolate_functor.h"
#include "interpolate/interpolate_kernel.cuh"
#include "interpolate/interpolate_launcher.h"

// Constant banks exist for the placement benchmark: divergent reads serialise there.
CONSTMEM_DEFINE_FLOAT_BANKS(interpolate_knots, 1024, 4);
// Global memory for host tables: eight of 4,096 knots, or two of 16,384; larger host tables go
// through a stream-ordered buffer.
CONSTMEM_DEFINE_FLOAT_GLOBAL_BANKS(interpolate_global_knots, 4096, 8);

namespace constmem {
namespace ops {
namespace {

using interpolate_kernels::InterpolateKernel;
using interpolate_kernels::kVectorsPerThread;

constexpr int kThreads = 256;
// Blocks that stage the table first: one of 1,024 threads an SM, which copies it once per SM.
// With warp-uniform inputs, 256-thread blocks (as many as fit) cost up to 1.13x global memory at
// 64 KiB, one 1,024-thread block an SM 1.04x (placement_bench).
constexpr int kStagingThreads = 1024;
template <class T>
StrategyLimits InterpolateLimits() {
  StrategyLimits limits;
  limits.constant_bank_bytes = interpolate_knots_banks::Of<T>::kBytes;
  // float64 data moves 16 bytes an element, and L1 serves the knots' divergent reads within 1.5%
  // of shared memory at every size (placement_bench): staging would only cost it.
  if (sizeof(T) == 8) limits.divergent_global_bytes = kInterpolateMaxKnots * sizeof(T);
  return limits;
}

// The knots each block of a launch in global memory stages (SharedPrefixSource), 0 for none: the
// shared-memory budget's worth, of float32 tables larger than the budget. The reads that land in
// the prefix are served by shared memory's banks, so a table just past the budget costs about what
// one just inside it costs. It pays at every size: with points spread over the whole table, the
// prefix, in the staged tables' blocks (1,024 threads, one an SM), ran faster than global memory
// alone in blocks of 256 from 16,385 knots to 2^20, 1.05-1.11x on an H100 (placement_bench
// --prefix), even at 2^20, where the prefix serves 1.6% of the reads. float64 reads knots from L1
// within 1.5% of shared memory (InterpolateLimits).
template <class T>
int PrefixKnots(std::int64_t knots, InterpolatePrefix prefix) {
  const auto budget =
      static_cast<std::int64_t>(InterpolateLimits<T>().shared_memory_bytes / sizeof(T));
  if (prefix == InterpolatePrefix::kNever || knots <= budget) return 0;
  return prefix == InterpolatePrefix::kAlways || sizeof(T) == 4 ? static_cast<int>(budget) : 0;
}

template <class In, class T, class Table, bool kVectorized>
Status LaunchKernel(int device, cudaStream_t stream, const In* x, In* y, std::int64_t count,
                    const InterpolateGrid<T>& grid, const Table& table) {
  constexpr int kBlockThreads = IsSharedTableSource<Table>::value ? kStagingThreads : kThreads;
  constexpr auto kernel = InterpolateKernel<In, T, Table, kVectorized, kBlockThreads>;
  constexpr std::int64_t kBlockElements =
      static_cast<std::int64_t>(kBlockThreads) * kVectorsPerThread * (16 / sizeof(In));
  const std::size_t shared = StagedTableBytes(table, grid.last + 1);
  int resident = 0;
  CONSTMEM_RETURN_IF_ERROR(SharedResidentBlocks<kernel>(kBlockThreads, device, shared, &resident));
  if constexpr (IsSharedTableSource<Table>::value) {
    int sms = 0;
    CONSTMEM_RETURN_IF_ERROR(MultiprocessorCount(device, &sms));
    resident = std::min(resident, sms);
  }
  const std::int64_t wanted = (count + kBlockElements - 1) / kBlockElements;
  kernel<<<PersistentGrid(wanted, resident), kBlockThreads, shared, stream>>>(x, y, count, grid,
                                                                              table);
  return CudaStatus(CONSTMEM_CUDA_CALL(kKernelLaunch, cudaGetLastError()),
                    "Interpolate kernel launch");
}

}  // namespace

template <class T>
Placement InterpolatePlacement(std::int64_t count, SourceKind source,
                               std::int64_t launch_elements) {
  return ChoosePlacementFor<T>(count, source, InterpolateLimits<T>(), TableAccess::kDivergent,
                               launch_elements);
}

template <class T>
bool InterpolateStagesPrefix(std::int64_t count, SourceKind source, std::int64_t launch_elements) {
  return InterpolatePlacement<T>(count, source, launch_elements) == Placement::kGlobalMemory &&
         PrefixKnots<T>(count, InterpolatePrefix::kAuto) > 0;
}

template <class In, class T>
Status LaunchInterpolateWithPlacement(GpuStream stream, const In* x, In* y, std::int64_t count,
                                      const TableView<T>& knots, double lo, double hi,
                                      Placement placement, LaunchReport* report,
                                      InterpolatePrefix prefix) {
  static_assert(std::is_same<T, ComputeTypeOf<In>>::value, "In is computed in ComputeTypeOf<In>");
  if (report != nullptr) *report = LaunchReport(placement);
  InterpolateGrid<T> grid{};
  CONSTMEM_RETURN_IF_ERROR(MakeInterpolateGrid<T>(lo, hi, knots.size, &grid));
  if (knots.values == nullptr) return InvalidArgument("Interpolate: null knots");
  if (count < 0 || count > kInterpolateMaxElements) {
    return InvalidArgument("Interpolate handles at most 2^62 elements; got " +
                           std::to_string(count));
  }
  if (count == 0) return Status::Ok();
  const bool aligned = reinterpret_cast<std::uintptr_t>(x) % 16 == 0 &&
                       reinterpret_cast<std::uintptr_t>(y) % 16 == 0;
  const auto launch = [&](int device, const auto& table) {
    using Table = std::decay_t<decltype(table)>;
    return aligned ? LaunchKernel<In, T, Table, true>(device, stream, x, y, count, grid, table)
                   : LaunchKernel<In, T, Table, false>(device, stream, x, y, count, grid, table);
  };
  const int prefix_knots = PrefixKnots<T>(knots.size, prefix);
  return LaunchWithTable<DefaultByValueTable<T>, interpolate_knots_banks::Of<T>,
                         interpolate_global_knots_banks::Of<T>>(
      stream, knots, placement,
      [&](int device, const auto& table) {
        // A table too large to stage whole stays in global memory; each block stages its first
        // knots besides.
        if constexpr (std::is_same<std::decay_t<decltype(table)>, GlobalTableReader<T>>::value) {
          if (prefix_knots > 0) {
            return launch(device, SharedPrefixSource<T>{table.values, prefix_knots});
          }
        }
        return launch(device, table);
      },
      report);
}

template <class In, class T>
Status LaunchInterpolate(GpuStream stream, const In* x, In* y, std::int64_t count,
                         const TableView<T>& knots, double lo, double hi, LaunchReport* report) {
  return LaunchInterpolateWithPlacement(stream, x, y, count, knots, lo, hi,
                                        InterpolatePlacement<T>(knots.size, knots.source, count),
                                        report);
}

#define CONSTMEM_INSTANTIATE_INTERPOLATE_PLACEMENT(T)                                 \
  template Placement InterpolatePlacement<T>(std::int64_t, SourceKind, std::int64_t); \
  template bool InterpolateStagesPrefix<T>(std::int64_t, SourceKind, std::int64_t);
CONSTMEM_INSTANTIATE_INTERPOLATE_PLACEMENT(float)
CONSTMEM_INSTANTIATE_INTERPOLATE_PLACEMENT(double)
#undef CONSTMEM_INSTANTIATE_INTERPOLATE_PLACEMENT

#define CONSTMEM_INSTANTIATE_INTERPOLATE(In, T)                                                 \
  template Status LaunchInterpolate<In, T>(GpuStream, const In*, In*, std::int64_t,             \
                                           const TableView<T>&, double, double, LaunchReport*); \
  template Status LaunchInterpolateWithPlacement<In, T>(                                        \
      GpuStream, const In*, In*, std::int64_t, const TableView<T>&, double, double, Placement,  \
      LaunchReport*, InterpolatePrefix);
CONSTMEM_INSTANTIATE_INTERPOLATE(float, float)
CONSTMEM_INSTANTIATE_INTERPOLATE(double, double)
CONSTMEM_INSTANTIATE_INTERPOLATE(Float16, float)
CONSTMEM_INSTANTIATE_INTERPOLATE(BFloat16, float)
#undef CONSTMEM_INSTANTIATE_INTERPOLATE

}  // namespace ops
}  // namespace constmem
