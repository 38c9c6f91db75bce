// SPDX-License-Identifier: Apache-2.0
// FirFilter's CUDA launcher: the taps' placement, teams and block size, the launches
// (fir_filter_tile.cuh describes the kernels, fir_filter_plan.h plans their tiles). No framework
// header reaches nvcc.

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "constmem/async_copy.cuh"
#include "constmem/constmem.cuh"
#include "constmem/dispatch.cuh"
#include "fir_filter/fir_filter_block_kernels.cuh"
#include "fir_filter/fir_filter_functor.h"
#include "fir_filter/fir_filter_launcher.h"
#include "fir_filter/fir_filter_plan.h"
#include "fir_filter/fir_filter_warp_kernel.cuh"

// Four slots of 512 taps per dtype; a filter of up to kFirTiledMaxTaps takes a run of slots, a
// longer one global memory. 8 + 16 KiB.
CONSTMEM_DEFINE_FLOAT_BANKS(fir_taps, constmem::ops::kFirTiledMaxTaps / 4, 4);

namespace constmem {
namespace ops {
namespace {

using namespace fir_kernels;  // NOLINT: the kernels are this file's

template <class T>
StrategyLimits FirLimits() {
  StrategyLimits limits;
  // The bank's size: longer filters are read from global memory.
  limits.constant_bank_bytes = fir_taps_banks::Of<T>::kBytes;
  limits.small_launch_elements = kFirFilterSmallLaunchElements;
  return limits;
}

// T: the data's type (its tiles are its compute type's). kChunked: FirChunkedKernel, for filters
// of more than kFirTiledMaxTaps (block teams).
template <class T, class Taps, int kShift, int kTeam, int kBlock, bool kChunked = false>
Status LaunchShifted(int device, cudaStream_t stream, const T* x, T* y, const FirShape& shape,
                     const Taps& taps) {
  using Tune = FirTuning<ComputeTypeOf<T>, kTeam, kBlock>;
  static_assert(!kChunked || kTeam == kBlock, "chunked filters run in block teams");
  constexpr auto kernel = kChunked      ? FirChunkedKernel<T, Taps, kShift, kBlock>
                          : kTeam == 32 ? FirWarpTeamKernel<T, Taps, kShift, kBlock>
                                        : FirBlockTeamKernel<T, Taps, kShift, kBlock>;
  constexpr std::size_t kMostShared = MostSharedBytes<T, kBlock>(kTeam == 32);
  // Long filters need more than the 48 KiB of shared memory a block gets without asking; asked
  // once a device.
  static std::array<std::atomic<bool>, kMaxDevices> shared_memory_raised{};
  if (!shared_memory_raised[device].load(std::memory_order_relaxed)) {
    CONSTMEM_RETURN_IF_CUDA_ERROR(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(kMostShared)),
        "cudaFuncSetAttribute(FirFilter kernel)");
    shared_memory_raised[device].store(true, std::memory_order_relaxed);
  }
  const std::size_t shared =
      SharedBytes<T, kTeam, kBlock>(static_cast<int>(kChunked ? kFirTiledMaxTaps : shape.taps));
  const std::int64_t tiles = shape.rows * ((shape.outputs + Tune::kTile - 1) / Tune::kTile);
  // The longest filter's shared memory gives every launch's grid (on sm_80 and sm_90 two blocks of
  // 256 threads a multiprocessor at every tap count: the static_asserts on SharedBytes).
  int resident = 0;
  CONSTMEM_RETURN_IF_ERROR(ResidentBlocks<kernel>(kBlock, device, &resident, kMostShared));
  const dim3 grid =
      PersistentGrid((tiles + Tune::kTeamsPerBlock - 1) / Tune::kTeamsPerBlock, resident);
  kernel<<<grid, kBlock, shared, stream>>>(x, y, shape.rows, shape.length, shape.outputs,
                                           static_cast<int>(shape.taps),
                                           static_cast<int>(shape.pad_left), taps);
  return CudaStatus(CONSTMEM_CUDA_CALL(kKernelLaunch, cudaGetLastError()), "FirFilter launch");
}

template <class T, class Taps, int kShift>
Status LaunchForTeam(int device, cudaStream_t stream, const T* x, T* y, const FirShape& shape,
                     const Taps& taps, std::size_t shared_bytes_per_block) {
  const bool warp_teams = shape.taps <= kMaxWarpTeamTaps;
  const bool chunked = shape.taps > kFirTiledMaxTaps;
  // A filter longer than the tiles is past the constant bank and the by-value block: its taps are
  // in global memory, the one reader the chunked kernel is compiled for (a third of the code).
  constexpr bool kGlobalTaps = std::is_same<Taps, GlobalTableReader<ComputeTypeOf<T>>>::value;
  if (chunked && !kGlobalTaps) {
    return InvalidArgument("FirFilter: a filter of " + std::to_string(shape.taps) +
                           " taps is read from global memory");
  }
  switch (FirFittingBlockThreads<T>(shape.taps, shared_bytes_per_block)) {
    case kThreads:
      if constexpr (kGlobalTaps) {
        if (chunked) {
          return LaunchShifted<T, Taps, kShift, kThreads, kThreads, true>(device, stream, x, y,
                                                                          shape, taps);
        }
      }
      return warp_teams
                 ? LaunchShifted<T, Taps, kShift, 32, kThreads>(device, stream, x, y, shape, taps)
                 : LaunchShifted<T, Taps, kShift, kThreads, kThreads>(device, stream, x, y, shape,
                                                                      taps);
    case kSmallBlockThreads:
      if constexpr (kGlobalTaps) {
        if (chunked) {
          return LaunchShifted<T, Taps, kShift, kSmallBlockThreads, kSmallBlockThreads, true>(
              device, stream, x, y, shape, taps);
        }
      }
      return warp_teams ? LaunchShifted<T, Taps, kShift, 32, kSmallBlockThreads>(device, stream, x,
                                                                                 y, shape, taps)
                        : LaunchShifted<T, Taps, kShift, kSmallBlockThreads, kSmallBlockThreads>(
                              device, stream, x, y, shape, taps);
  }
  return Status(StatusCode::kFailedPrecondition,
                "FirFilter's GPU kernel needs " +
                    std::to_string(MostSharedBytes<T, kSmallBlockThreads>(warp_teams)) +
                    " bytes of shared memory a block; this GPU offers " +
                    std::to_string(shared_bytes_per_block));
}

// One kernel for each offset of a tile's first sample within a vector (of the compute type).
template <class T, class Taps>
Status LaunchKernel(int device, cudaStream_t stream, const T* x, T* y, const FirShape& shape,
                    const Taps& taps, std::size_t shared_bytes_per_block) {
  constexpr int L = FirTuning<ComputeTypeOf<T>>::kLanes;
  switch ((L - shape.pad_left % L) % L) {
    case 0:
      return LaunchForTeam<T, Taps, 0>(device, stream, x, y, shape, taps, shared_bytes_per_block);
    case 1:
      return LaunchForTeam<T, Taps, 1>(device, stream, x, y, shape, taps, shared_bytes_per_block);
    case 2:
      if constexpr (L > 2) {
        return LaunchForTeam<T, Taps, 2>(device, stream, x, y, shape, taps, shared_bytes_per_block);
      }
      break;
    case 3:
      if constexpr (L > 3) {
        return LaunchForTeam<T, Taps, 3>(device, stream, x, y, shape, taps, shared_bytes_per_block);
      }
      break;
  }
  return Status(StatusCode::kInternal, "FirFilter: no kernel for this padding");
}

}  // namespace

template <class T>
Placement FirFilterPlacement(std::int64_t count, SourceKind source, std::int64_t launch_elements) {
  return ChoosePlacementFor<T>(count, source, FirLimits<T>(), TableAccess::kUniform,
                               launch_elements);
}

template <class T>
int FirFilterBlockThreads(std::int64_t taps, std::size_t shared_bytes_per_block) {
  return FirFittingBlockThreads<T>(taps, shared_bytes_per_block);
}

template <class T>
Status LaunchFirFilterWithSharedMemory(GpuStream stream, const T* x, T* y, const FirShape& shape,
                                       const TableView<ComputeTypeOf<T>>& taps, Placement placement,
                                       std::size_t shared_bytes_per_block, LaunchReport* report) {
  using C = ComputeTypeOf<T>;
  if (report != nullptr) *report = LaunchReport(placement);
  if (taps.values == nullptr || taps.size < 1 || taps.size > kFirMaxTaps ||
      taps.size != shape.taps) {
    return InvalidArgument("FirFilter needs 1 to " + std::to_string(kFirMaxTaps) + " taps; got " +
                           std::to_string(taps.size));
  }
  if (shape.rows < 0 || shape.length < 0 || shape.outputs < 0 ||
      shape.rows * std::max(shape.length, shape.outputs) > kFirMaxElements) {
    return InvalidArgument("FirFilter: invalid shape");
  }
  if (shape.rows == 0 || shape.outputs == 0) return Status::Ok();
  return LaunchWithTable<DefaultByValueTable<C>, fir_taps_banks::Of<C>>(
      stream, taps, placement,
      [&](int device, const auto& reader) {
        std::size_t device_bytes = 0;
        CONSTMEM_RETURN_IF_ERROR(MaxSharedBytesPerBlock(device, &device_bytes));
        return LaunchKernel(device, stream, x, y, shape, reader,
                            std::min(device_bytes, shared_bytes_per_block));
      },
      report);
}

template <class T>
Status LaunchFirFilterWithPlacement(GpuStream stream, const T* x, T* y, const FirShape& shape,
                                    const TableView<ComputeTypeOf<T>>& taps, Placement placement,
                                    LaunchReport* report) {
  return LaunchFirFilterWithSharedMemory(stream, x, y, shape, taps, placement,
                                         std::numeric_limits<std::size_t>::max(), report);
}

template <class T>
Status LaunchFirFilter(GpuStream stream, const T* x, T* y, const FirShape& shape,
                       const TableView<ComputeTypeOf<T>>& taps, LaunchReport* report) {
  return LaunchFirFilterWithPlacement(
      stream, x, y, shape, taps,
      FirFilterPlacement<ComputeTypeOf<T>>(taps.size, taps.source,
                                           LaunchElements(shape.rows, shape.outputs)),
      report);
}

// FirFilterPlacement answers for the taps' type (float for 16-bit data); the rest for the data's.
template Placement FirFilterPlacement<float>(std::int64_t, SourceKind, std::int64_t);
template Placement FirFilterPlacement<double>(std::int64_t, SourceKind, std::int64_t);
#define CONSTMEM_INSTANTIATE_FIR(T)                                                              \
  template Status LaunchFirFilter<T>(GpuStream, const T*, T*, const FirShape&,                   \
                                     const TableView<ComputeTypeOf<T>>&, LaunchReport*);         \
  template Status LaunchFirFilterWithPlacement<T>(GpuStream, const T*, T*, const FirShape&,      \
                                                  const TableView<ComputeTypeOf<T>>&, Placement, \
                                                  LaunchReport*);                                \
  template Status LaunchFirFilterWithSharedMemory<T>(GpuStream, const T*, T*, const FirShape&,   \
                                                     const TableView<ComputeTypeOf<T>>&,         \
                                                     Placement, std::size_t, LaunchReport*);     \
  template int FirFilterBlockThreads<T>(std::int64_t, std::size_t);
CONSTMEM_INSTANTIATE_FIR(float)
CONSTMEM_INSTANTIATE_FIR(double)
CONSTMEM_INSTANTIATE_FIR(Float16)
CONSTMEM_INSTANTIATE_FIR(BFloat16)
#undef CONSTMEM_INSTANTIATE_FIR

}  // namespace ops
}  // namespace constmem
