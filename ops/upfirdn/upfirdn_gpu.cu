// SPDX-License-Identifier: Apache-2.0
// Upfirdn's CUDA launcher: the taps' placement, the arrangement of phases, the tile, the launches
// (upfirdn_tiled_kernel.cuh and upfirdn_direct_kernel.cuh describe the kernels, upfirdn_plan.h
// their tiles). No framework header reaches nvcc.

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
#include "constmem/shared_table.cuh"
#include "upfirdn/upfirdn_direct_kernel.cuh"
#include "upfirdn/upfirdn_functor.h"
#include "upfirdn/upfirdn_launcher.h"
#include "upfirdn/upfirdn_plan.h"
#include "upfirdn/upfirdn_tiled_kernel.cuh"

// The taps in constant memory: 8 slots of 512 per dtype, so a table of up to 512 taps takes one
// slot and one of 4,096 all eight: 16 KiB of float32 and 32 KiB of float64, 48 KiB of the 64 KiB a
// module may declare, which leaves room in the module for another op's banks of up to 16 KiB.
// scipy.signal.resample_poly's default filter (20 * max(up, down) + 1 taps) fits it up to rates of
// 204, so 44.1 kHz <-> 48 kHz (160/147, 3,201 taps) runs from constant memory. Longer tables are
// read from global memory (UpfirdnLimits).
CONSTMEM_DEFINE_FLOAT_BANKS(upfirdn_taps, 512, 8);
// Global memory, for host tables staged in shared memory or read from global memory: two tables
// of 4,096 taps at once, or eight of up to 1,024; longer host tables go through a stream-ordered
// device buffer.
CONSTMEM_DEFINE_FLOAT_GLOBAL_BANKS(upfirdn_global_taps, 1024, 8);

namespace constmem {
namespace ops {
namespace {

using namespace upfirdn_kernels;  // NOLINT: the kernels are this file's

// The most shared memory a table in global memory takes staged by phase for a tile of a phase a
// lane: under half of what an SM of compute capability 9.0 holds (228 KiB). Its lanes read
// consecutive words there, one wavefront a read; from global memory their taps, p + m * up for
// p = c * down mod up, spread over several cache lines a read, a wavefront each (96 kHz ->
// 11.025 kHz: 16,718 taps, 67 KiB, over 5 lines). The launch reports the table's placement,
// global memory, all the same.
constexpr std::size_t kTapRowsMostBytes = 96 * 1024;

template <class Taps>
constexpr bool kDivergentReader =
    IsSharedTableSource<Taps>::value || std::is_same<Taps, GlobalTableReader<float>>::value ||
    std::is_same<Taps, GlobalTableReader<double>>::value;

// T: the data's type or its taps' (ComputeTypeOf).
template <class T>
StrategyLimits UpfirdnLimits() {
  StrategyLimits limits;
  limits.constant_bank_bytes = upfirdn_taps_banks::Of<ComputeTypeOf<T>>::kBytes;
  return limits;
}

// Whether the lanes of a warp share a phase for `shape` (one the tiled kernel takes) with a table
// read as `divergent_reader` says, planned with `most_bytes` of shared memory a block beside
// `taps_bytes` of staged taps (by default, room for any tile).
template <class T>
bool PhasePerWarp(const UpfirdnShape& shape, bool divergent_reader, UpfirdnArrangement arrangement,
                  std::size_t most_bytes = kTileBudgetBytes * 8, std::size_t taps_bytes = 0) {
  if (!divergent_reader) return true;
  switch (arrangement) {
    case UpfirdnArrangement::kPhasePerWarp:
      return true;
    case UpfirdnArrangement::kPhasePerLane:
      return false;
    case UpfirdnArrangement::kAuto:
    case UpfirdnArrangement::kDirect:
      break;
  }
  return ChooseTilePlan<T>(shape, true, most_bytes, kHaloChunkTerms, taps_bytes).per_warp;
}

// The shared memory a table staged by `placement` takes, rounded to 16 bytes (the tile buffers
// follow it).
template <class T>
std::size_t StagedTapsBytes(std::int64_t taps, Placement placement) {
  if (placement != Placement::kSharedMemory) return 0;
  return RoundUpTo16(static_cast<std::size_t>(taps) * sizeof(ComputeTypeOf<T>));
}

// Whether the tiled kernel takes `shape` beside `taps_bytes` of staged taps on a GPU that offers
// `device_bytes` a block (by default one with room for the taps and kTiledMostBytes).
template <class T>
bool Tiled(const UpfirdnShape& shape, std::size_t taps_bytes,
           std::size_t device_bytes = std::numeric_limits<std::size_t>::max()) {
  if (device_bytes <= taps_bytes) return false;
  return TiledFits<T>(shape, std::min(device_bytes - taps_bytes, kTiledMostBytes));
}

// Blocks of `threads` threads with `shared` bytes that fit on the device at once (a persistent
// grid), asked once per device, block size and KiB; SharedResidentBlocks allows the kernel the
// shared memory first.
template <auto Kernel>
Status ResidentBlocksOf(int device, int threads, std::size_t shared, int* blocks) {
  CONSTMEM_RETURN_IF_ERROR(SharedResidentBlocks<Kernel>(kThreads, device, shared, blocks));
  if (threads == kThreads) return Status::Ok();
  constexpr int kMaxKiB = 256;
  static std::array<std::array<std::atomic<int>, kMaxKiB + 1>, kMaxDevices*(kThreads / 32 + 1)>
      cached{};
  const std::size_t kib = (shared + 1023) / 1024;  // <= kMaxKiB: SharedResidentBlocks checked
  auto& slot = cached[device * (kThreads / 32 + 1) + threads / 32][kib];
  int value = slot.load(std::memory_order_relaxed);
  if (value == 0) {
    CONSTMEM_RETURN_IF_ERROR(detail::QueryResidentBlocks(reinterpret_cast<const void*>(Kernel),
                                                         threads, device, kib * 1024, &value));
    slot.store(value, std::memory_order_relaxed);
  }
  *blocks = value;
  return Status::Ok();
}

template <class T, class Taps, int kQ, bool kPerWarp>
Status LaunchPlanned(int device, cudaStream_t stream, const T* x, T* y, const UpfirdnShape& shape,
                     const Taps& taps) {
  std::size_t device_bytes = 0;
  CONSTMEM_RETURN_IF_ERROR(MaxSharedBytesPerBlock(device, &device_bytes));
  const std::size_t taps_bytes = TiledTapsBytes<kPerWarp, T>(taps, shape);
  // Tiled<T> held for these bytes: the plan's sizes and the geometry's fit int.
  const TilePlan plan =
      ChooseTilePlan<T>(shape, kPerWarp, device_bytes > taps_bytes ? device_bytes - taps_bytes : 0,
                        kHaloChunkTerms, taps_bytes);
  const Geometry g = MakeTiledGeometry<T>(shape, plan, taps_bytes);
  const std::size_t shared = g.tiles_offset + plan.bytes;
  if (shared > device_bytes) {
    return Status(StatusCode::kFailedPrecondition,
                  "Upfirdn's GPU kernel needs " + std::to_string(shared) +
                      " bytes of shared memory a block for " + std::to_string(shape.taps) +
                      " taps at up " + std::to_string(shape.up) + ", down " +
                      std::to_string(shape.down) + "; this GPU offers " +
                      std::to_string(device_bytes));
  }
  const int threads = TileThreads(g);
  return WithTiledKernel<T, Taps, kQ, kPerWarp>(g, [&](auto chosen) {
    constexpr auto kernel = decltype(chosen)::value;
    int resident = 0;
    CONSTMEM_RETURN_IF_ERROR(ResidentBlocksOf<kernel>(device, threads, shared, &resident));
    kernel<<<PersistentGrid(g.tiles, resident), threads, shared, stream>>>(x, y, g, taps);
    return CudaStatus(CONSTMEM_CUDA_CALL(kKernelLaunch, cudaGetLastError()), "Upfirdn launch");
  });
}

template <class T, class Taps, bool kPerWarp>
Status LaunchForStride(int device, cudaStream_t stream, const T* x, T* y, const UpfirdnShape& shape,
                       const Taps& taps) {
  return WithCompiledStride<T, kPerWarp>(shape, [&](auto q) {
    return LaunchPlanned<T, Taps, decltype(q)::value, kPerWarp>(device, stream, x, y, shape, taps);
  });
}

template <class T, class Taps>
Status LaunchDirect(int device, cudaStream_t stream, const T* x, T* y, const UpfirdnShape& shape,
                    const Taps& taps) {
  constexpr auto kernel = UpfirdnDirectKernel<T, Taps>;
  const std::size_t shared = StagedTableBytes(taps, static_cast<int>(shape.taps));
  int resident = 0;
  CONSTMEM_RETURN_IF_ERROR(SharedResidentBlocks<kernel>(kThreads, device, shared, &resident));
  const DirectGeometry g{shape.rows, shape.length, shape.outputs, shape.taps, shape.up, shape.down};
  const std::int64_t blocks = (shape.rows * shape.outputs + kThreads - 1) / kThreads;
  kernel<<<PersistentGrid(blocks, resident), kThreads, shared, stream>>>(x, y, g, taps);
  return CudaStatus(CONSTMEM_CUDA_CALL(kKernelLaunch, cudaGetLastError()), "Upfirdn launch");
}

template <class T, class Taps>
Status LaunchKernel(int device, cudaStream_t stream, const T* x, T* y, const UpfirdnShape& shape,
                    const Taps& taps, UpfirdnArrangement arrangement) {
  using C = ComputeTypeOf<T>;
  if (arrangement == UpfirdnArrangement::kDirect) {
    return LaunchDirect<T>(device, stream, x, y, shape, taps);
  }
  std::size_t device_bytes = 0;
  CONSTMEM_RETURN_IF_ERROR(MaxSharedBytesPerBlock(device, &device_bytes));
  const std::size_t taps_bytes = TiledTapsBytes<true, T>(taps, shape);  // as StageTable stages
  if (!Tiled<T>(shape, taps_bytes, device_bytes)) {
    if (arrangement == UpfirdnArrangement::kAuto) {
      return LaunchDirect<T>(device, stream, x, y, shape, taps);
    }
    return Status(StatusCode::kFailedPrecondition,
                  "Upfirdn's tiled kernel cannot take " + std::to_string(shape.taps) +
                      " taps at up " + std::to_string(shape.up) + ", down " +
                      std::to_string(shape.down) + " on this GPU (" + std::to_string(device_bytes) +
                      " bytes of shared memory a block); the direct kernel runs them");
  }
  if constexpr (kDivergentReader<Taps>) {
    if (!PhasePerWarp<T>(shape, true, arrangement, device_bytes - taps_bytes, taps_bytes)) {
      // A phase a lane: the taps staged by phase (StageUpfirdnTaps), a table in global memory too
      // up to kTapRowsMostBytes where a tile fits beside it; else read where they are.
      const std::size_t rows_bytes = TapRowsBytes<T>(shape);
      const bool rows_fit = Tiled<T>(shape, rows_bytes, device_bytes);
      if constexpr (std::is_same<Taps, GlobalTableReader<C>>::value) {
        if (TapRows(shape) > 0 && rows_fit && rows_bytes <= kTapRowsMostBytes) {
          return LaunchForStride<T, SharedTableSource<C>, false>(device, stream, x, y, shape,
                                                                 SharedTableSource<C>{taps.values});
        }
      }
      if constexpr (std::is_same<Taps, SharedTableSource<C>>::value) {
        // Rows that leave no room for a tile: the taps read where they are.
        if (!rows_fit) {
          return LaunchForStride<T, GlobalTableReader<C>, false>(device, stream, x, y, shape,
                                                                 GlobalTableReader<C>{taps.values});
        }
      } else if constexpr (kStagedByPhase<Taps>) {
        if (!rows_fit) {
          if (arrangement == UpfirdnArrangement::kAuto) {
            return LaunchDirect<T>(device, stream, x, y, shape, taps);
          }
          return Status(StatusCode::kFailedPrecondition,
                        "Upfirdn's tiled kernel cannot stage " + std::to_string(shape.taps) +
                            " taps by phase at up " + std::to_string(shape.up) + ", down " +
                            std::to_string(shape.down) + " on this GPU (" +
                            std::to_string(device_bytes) + " bytes of shared memory a block)");
        }
      }
      return LaunchForStride<T, Taps, false>(device, stream, x, y, shape, taps);
    }
  } else if (arrangement == UpfirdnArrangement::kPhasePerLane) {
    return InvalidArgument(
        "Upfirdn: lanes of different phases read their own taps, from shared or global memory "
        "only");
  }
  return LaunchForStride<T, Taps, true>(device, stream, x, y, shape, taps);
}

}  // namespace

template <class T>
Placement UpfirdnPlacement(std::int64_t count, SourceKind source, std::int64_t launch_elements) {
  return ChoosePlacementFor<T>(count, source, UpfirdnLimits<T>(), TableAccess::kUniform,
                               launch_elements);
}

template <class T>
Placement UpfirdnPlacementForShape(const UpfirdnShape& shape, SourceKind source) {
  using C = ComputeTypeOf<T>;
  // An invalid shape has no tile (its phases may divide by zero): the launch refuses it.
  if (!ValidUpfirdnShape(shape)) return UpfirdnPlacement<C>(shape.taps, source);
  const bool one_phase = MakeUpfirdnPhases(shape.up, shape.down).period == 1;
  const std::int64_t launch = LaunchElements(shape.rows, shape.outputs);
  const Placement divergent = ChoosePlacementFor<C>(shape.taps, source, UpfirdnLimits<T>(),
                                                    TableAccess::kDivergent, launch);
  if (!Tiled<T>(shape, 0)) {
    // The direct kernel: consecutive lanes read the taps of consecutive phases, unless there is
    // one phase (up dividing down).
    return one_phase ? UpfirdnPlacement<C>(shape.taps, source, launch) : divergent;
  }
  // A small launch takes a small host table by value in any arrangement (ChoosePlacement).
  if (divergent == Placement::kByValue) return divergent;
  if (ChooseTilePlan<T>(shape, true).per_warp) {
    // One phase a warp, every lane reading the same tap. A small host table travels by value (no
    // upload); any other is staged in shared memory where it fits, which beat the constant bank
    // at every size upfirdn_bench measured on the H200 (3-22% from 31 to 255 taps, 3.4x at 4,096:
    // each tap read feeds a thread's 7 outputs, too few to keep a long table in the constant
    // cache).
    const Placement uniform = UpfirdnPlacement<C>(shape.taps, source);
    if (uniform == Placement::kByValue) return uniform;
  }
  // The taps in shared memory where they fit beside the tile, else in global memory.
  const std::size_t bytes = StagedTapsBytes<T>(shape.taps, Placement::kSharedMemory);
  return bytes <= UpfirdnLimits<T>().shared_memory_bytes && Tiled<T>(shape, bytes)
             ? Placement::kSharedMemory
             : Placement::kGlobalMemory;
}

template <class T>
UpfirdnArrangement UpfirdnChosenArrangement(const UpfirdnShape& shape, Placement placement) {
  if (!ValidUpfirdnShape(shape) || !Tiled<T>(shape, StagedTapsBytes<T>(shape.taps, placement))) {
    return UpfirdnArrangement::kDirect;
  }
  const bool divergent =
      placement == Placement::kSharedMemory || placement == Placement::kGlobalMemory;
  return PhasePerWarp<T>(shape, divergent, UpfirdnArrangement::kAuto)
             ? UpfirdnArrangement::kPhasePerWarp
             : UpfirdnArrangement::kPhasePerLane;
}

template <class T>
Status LaunchUpfirdnWithArrangement(GpuStream stream, const T* x, T* y, const UpfirdnShape& shape,
                                    const TableView<ComputeTypeOf<T>>& taps, Placement placement,
                                    UpfirdnArrangement arrangement, LaunchReport* report) {
  using C = ComputeTypeOf<T>;
  if (report != nullptr) *report = LaunchReport(placement);
  if (!ValidUpfirdnShape(shape)) return InvalidArgument("Upfirdn: invalid shape");
  if (taps.values == nullptr || taps.size != shape.taps) {
    return InvalidArgument("Upfirdn needs " + std::to_string(shape.taps) + " taps (1 to " +
                           std::to_string(kUpfirdnMaxTaps) + "); got " + std::to_string(taps.size));
  }
  if (shape.rows == 0 || shape.outputs == 0) return Status::Ok();
  return LaunchWithTable<DefaultByValueTable<C>, upfirdn_taps_banks::Of<C>,
                         upfirdn_global_taps_banks::Of<C>>(
      stream, taps, placement,
      [&](int device, const auto& reader) {
        return LaunchKernel<T>(device, stream, x, y, shape, reader, arrangement);
      },
      report);
}

template <class T>
Status LaunchUpfirdnWithPlacement(GpuStream stream, const T* x, T* y, const UpfirdnShape& shape,
                                  const TableView<ComputeTypeOf<T>>& taps, Placement placement,
                                  LaunchReport* report) {
  return LaunchUpfirdnWithArrangement(stream, x, y, shape, taps, placement,
                                      UpfirdnArrangement::kAuto, report);
}

template <class T>
Status LaunchUpfirdn(GpuStream stream, const T* x, T* y, const UpfirdnShape& shape,
                     const TableView<ComputeTypeOf<T>>& taps, LaunchReport* report) {
  return LaunchUpfirdnWithPlacement(stream, x, y, shape, taps,
                                    UpfirdnPlacementForShape<T>(shape, taps.source), report);
}

// UpfirdnPlacement answers for the taps' type (float for 16-bit data); the launches for the data's.
template Placement UpfirdnPlacement<float>(std::int64_t, SourceKind, std::int64_t);
template Placement UpfirdnPlacement<double>(std::int64_t, SourceKind, std::int64_t);
#define CONSTMEM_INSTANTIATE_UPFIRDN(T)                                                          \
  template Placement UpfirdnPlacementForShape<T>(const UpfirdnShape&, SourceKind);               \
  template UpfirdnArrangement UpfirdnChosenArrangement<T>(const UpfirdnShape&, Placement);       \
  template Status LaunchUpfirdn<T>(GpuStream, const T*, T*, const UpfirdnShape&,                 \
                                   const TableView<ComputeTypeOf<T>>&, LaunchReport*);           \
  template Status LaunchUpfirdnWithPlacement<T>(GpuStream, const T*, T*, const UpfirdnShape&,    \
                                                const TableView<ComputeTypeOf<T>>&, Placement,   \
                                                LaunchReport*);                                  \
  template Status LaunchUpfirdnWithArrangement<T>(GpuStream, const T*, T*, const UpfirdnShape&,  \
                                                  const TableView<ComputeTypeOf<T>>&, Placement, \
                                                  UpfirdnArrangement, LaunchReport*);
CONSTMEM_INSTANTIATE_UPFIRDN(float)
CONSTMEM_INSTANTIATE_UPFIRDN(double)
CONSTMEM_INSTANTIATE_UPFIRDN(Float16)
CONSTMEM_INSTANTIATE_UPFIRDN(BFloat16)
#undef CONSTMEM_INSTANTIATE_UPFIRDN

}  // namespace ops
}  // namespace constmem
