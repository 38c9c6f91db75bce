// SPDX-License-Identifier: Apache-2.0
// Interpolate's CUDA kernel and launcher. Every lane reads the knots at an index computed from its
// own x, so the table goes where divergent reads are fast: each block's shared memory (32 banks,
// 32 addresses a cycle) or, for tables too large to stage, global memory through L1. A host table
// of up to 4 KiB travels by value and each block stages it from the parameter; larger host tables
// reach global memory through a bank of it, with the same hazard tracking as a constant bank.
// No framework header reaches nvcc.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "constmem/constmem.cuh"
#include "constmem/shared_table.cuh"
#include "interpolate/interpolate_functor.h"
#include "interpolate/interpolate_launcher.h"

// Constant banks exist for the placement benchmark: divergent reads serialise there.
CONSTMEM_DEFINE_FLOAT_BANKS(interpolate_knots, 1024, 4);
// Global memory for host tables: eight of 4,096 knots, or two of 16,384; larger host tables go
// through a stream-ordered buffer.
CONSTMEM_DEFINE_FLOAT_GLOBAL_BANKS(interpolate_global_knots, 4096, 8);

namespace constmem {
namespace ops {
namespace {

constexpr int kThreads = 256;
// Blocks that stage the table first: one of 1,024 threads an SM, which copies it once per SM.
// With warp-uniform inputs, 256-thread blocks (as many as fit) cost up to 1.13x global memory at
// 64 KiB, one 1,024-thread block an SM 1.04x (placement_bench).
constexpr int kStagingThreads = 1024;
// 16-byte vectors each thread has in flight: enough loads to cover memory latency with the few
// blocks a large staged table leaves room for.
constexpr int kVectorsPerThread = 4;

template <class T>
StrategyLimits InterpolateLimits() {
  StrategyLimits limits;
  limits.constant_bank_bytes = interpolate_knots_banks::Of<T>::kBytes;
  // float64 data moves 16 bytes an element, and L1 serves the knots' divergent reads within 1.5%
  // of shared memory at every size (placement_bench): staging would only cost it.
  if (sizeof(T) == 8) limits.divergent_global_bytes = kInterpolateMaxKnots * sizeof(T);
  return limits;
}

template <class T, class Table, bool kVectorized, int kBlockThreads>
__global__ void __launch_bounds__(kBlockThreads)
    InterpolateKernel(const T* x, T* y, std::int64_t count, InterpolateGrid<T> grid,
                      const __grid_constant__ Table table) {
  extern __shared__ __align__(16) unsigned char staging[];
  const auto& knots = StageTable(table, grid.last + 1, staging);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  std::int64_t done = 0;
  if (kVectorized) {
    using V = typename Vector16<T>::type;
    constexpr int kLanes = static_cast<int>(sizeof(V) / sizeof(T));
    const std::int64_t vectors = count / kLanes;
    const V* in = reinterpret_cast<const V*>(x);
    V* out = reinterpret_cast<V*>(y);
    std::int64_t i = first;
    // `y` may be `x` (a framework's forwarded buffer): each vector is read before it is written.
    for (; i + (kVectorsPerThread - 1) * stride < vectors; i += kVectorsPerThread * stride) {
      V v[kVectorsPerThread];
#pragma unroll
      for (int k = 0; k < kVectorsPerThread; ++k) v[k] = in[i + k * stride];
#pragma unroll
      for (int k = 0; k < kVectorsPerThread; ++k) {
        T* lanes = reinterpret_cast<T*>(&v[k]);
#pragma unroll
        for (int l = 0; l < kLanes; ++l) lanes[l] = InterpolateElement(lanes[l], knots, grid);
        out[i + k * stride] = v[k];
      }
    }
    for (; i < vectors; i += stride) {
      V v = in[i];
      T* lanes = reinterpret_cast<T*>(&v);
#pragma unroll
      for (int l = 0; l < kLanes; ++l) lanes[l] = InterpolateElement(lanes[l], knots, grid);
      out[i] = v;
    }
    done = vectors * kLanes;
  }
  for (std::int64_t i = done + first; i < count; i += stride) {
    y[i] = InterpolateElement(x[i], knots, grid);
  }
}

template <class T, class Table, bool kVectorized>
Status LaunchKernel(int device, cudaStream_t stream, const T* x, T* y, std::int64_t count,
                    const InterpolateGrid<T>& grid, const Table& table) {
  constexpr int kBlockThreads = IsSharedTableSource<Table>::value ? kStagingThreads : kThreads;
  constexpr auto kernel = InterpolateKernel<T, Table, kVectorized, kBlockThreads>;
  constexpr std::int64_t kBlockElements =
      static_cast<std::int64_t>(kBlockThreads) * kVectorsPerThread * (16 / sizeof(T));
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
Status LaunchInterpolateWithPlacement(GpuStream stream, const T* x, T* y, std::int64_t count,
                                      const TableView<T>& knots, double lo, double hi,
                                      Placement placement, LaunchReport* report) {
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
  return LaunchWithTable<DefaultByValueTable<T>, interpolate_knots_banks::Of<T>,
                         interpolate_global_knots_banks::Of<T>>(
      stream, knots, placement,
      [&](int device, const auto& table) {
        return aligned ? LaunchKernel<T, std::decay_t<decltype(table)>, true>(device, stream, x, y,
                                                                              count, grid, table)
                       : LaunchKernel<T, std::decay_t<decltype(table)>, false>(device, stream, x, y,
                                                                               count, grid, table);
      },
      report);
}

template <class T>
Status LaunchInterpolate(GpuStream stream, const T* x, T* y, std::int64_t count,
                         const TableView<T>& knots, double lo, double hi, LaunchReport* report) {
  return LaunchInterpolateWithPlacement(stream, x, y, count, knots, lo, hi,
                                        InterpolatePlacement<T>(knots.size, knots.source, count),
                                        report);
}

#define CONSTMEM_INSTANTIATE_INTERPOLATE(T)                                                        \
  template Placement InterpolatePlacement<T>(std::int64_t, SourceKind, std::int64_t);              \
  template Status LaunchInterpolate<T>(GpuStream, const T*, T*, std::int64_t, const TableView<T>&, \
                                       double, double, LaunchReport*);                             \
  template Status LaunchInterpolateWithPlacement<T>(GpuStream, const T*, T*, std::int64_t,         \
                                                    const TableView<T>&, double, double,           \
                                                    Placement, LaunchReport*);
CONSTMEM_INSTANTIATE_INTERPOLATE(float)
CONSTMEM_INSTANTIATE_INTERPOLATE(double)
#undef CONSTMEM_INSTANTIATE_INTERPOLATE

}  // namespace ops
}  // namespace constmem
