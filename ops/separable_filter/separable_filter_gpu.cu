// SPDX-License-Identifier: Apache-2.0
// SeparableFilter's CUDA launcher: the taps' placement, the kernel a shape takes (the register
// kernel, the fused kernel in the tile separable_filter_plan.h picks, or the two passes), the
// launches. No framework header reaches nvcc.

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "constmem/async_copy.cuh"
#include "constmem/constmem.cuh"
#include "constmem/dispatch.cuh"
#include "constmem/stream_buffer.cuh"
#include "separable_filter/separable_filter_functor.h"
#include "separable_filter/separable_filter_launcher.h"
#include "separable_filter/separable_filter_plan.h"
#include "separable_filter/separable_filter_register_kernel.cuh"
#include "separable_filter/separable_filter_tile_kernel.cuh"
#include "separable_filter/separable_filter_two_pass_kernels.cuh"

// Four slots of 1,024 taps per dtype (a shared table of two 127-tap filters fits one; a per-image
// table takes a run of slots, up to all four): 16 KiB + 32 KiB of the module's 64 KiB (64 KiB
// would not hold a fifth slot of both types). A larger table is read from global memory: a
// per-image table is read warp-uniformly like a shared one (a block works on one image).
CONSTMEM_DEFINE_FLOAT_BANKS(separable_taps, 1024, 4);

namespace constmem {
namespace ops {
namespace {

using namespace separable_kernels;  // NOLINT: the kernels are this file's

template <class T>
StrategyLimits SeparableLimits() {
  StrategyLimits limits;
  limits.constant_bank_bytes = separable_taps_banks::Of<T>::kBytes;
  limits.small_launch_elements = kSeparableSmallLaunchElements;
  return limits;
}

template <class In, class T, class Taps>
Status LaunchTwoPass(int device, cudaStream_t stream, const In* x, In* y,
                     const SeparableShape& shape, const Taps& taps, TapLayout layout) {
  constexpr auto row_kernel = SeparableRowPassKernel<In, T, Taps>;
  constexpr auto column_kernel = SeparableColumnPassKernel<In, T, Taps>;
  const Geometry g = MakeGeometry(shape, /*interleave=*/false, layout);
  const std::size_t plane_bytes = static_cast<std::size_t>(g.height) * g.width * sizeof(T);
  const std::int64_t batch = std::max<std::int64_t>(
      1,
      std::min<std::int64_t>(g.planes, static_cast<std::int64_t>(kMostScratchBytes / plane_bytes)));
  int row_resident = 0, column_resident = 0;
  CONSTMEM_RETURN_IF_ERROR(ResidentBlocks<row_kernel>(kTwoPassThreads, device, &row_resident));
  CONSTMEM_RETURN_IF_ERROR(
      ResidentBlocks<column_kernel>(kTwoPassThreads, device, &column_resident));
  StreamOrderedBuffer scratch;
  CONSTMEM_RETURN_IF_ERROR(
      scratch.Allocate(stream, device, static_cast<std::size_t>(batch) * plane_bytes));
  T* const tmp = static_cast<T*>(scratch.data());
  constexpr int kWarps = kTwoPassThreads / 32;
  for (std::int64_t first = 0; first < g.planes; first += batch) {
    const std::int64_t planes = std::min(batch, g.planes - first);
    const std::int64_t row_tasks = planes * g.height * ((g.width + kRowSegment - 1) / kRowSegment);
    row_kernel<<<PersistentGrid((row_tasks + kWarps - 1) / kWarps, row_resident), kTwoPassThreads,
                 0, stream>>>(x, tmp, g, first, planes, taps);
    CONSTMEM_RETURN_IF_ERROR(CudaStatus(CONSTMEM_CUDA_CALL(kKernelLaunch, cudaGetLastError()),
                                        "SeparableFilter row pass launch"));
    const std::int64_t column_tasks =
        planes * ((g.height + kColumnPassOutputs - 1) / kColumnPassOutputs) * ((g.width + 31) / 32);
    column_kernel<<<PersistentGrid((column_tasks + kWarps - 1) / kWarps, column_resident),
                    kTwoPassThreads, 0, stream>>>(tmp, y, g, first, planes, taps);
    CONSTMEM_RETURN_IF_ERROR(CudaStatus(CONSTMEM_CUDA_CALL(kKernelLaunch, cudaGetLastError()),
                                        "SeparableFilter column pass launch"));
  }
  return scratch.Release();  // the free is enqueued after the kernels
}

// The register kernel reads its 2 k taps once a strip, so where they are hardly matters to its
// speed: one type of taps for every placement (the joined table by value, the bank, global
// memory), one kernel for each k and channel count.
template <class T>
struct AnyPlacementTaps {
  using BankReader = typename separable_taps_banks::Of<T>::Reader;
  Placement placement;
  DefaultByValueTable<T> values;  // kByValue: the joined table
  BankReader row_bank, column_bank;
  const T* row_global;
  const T* column_global;
};
template <class T>
AnyPlacementTaps<T> AnyPlacement(const DefaultByValueTable<T>& joined) {
  AnyPlacementTaps<T> taps{};
  taps.placement = Placement::kByValue;
  taps.values = joined;
  return taps;
}
template <class T>
AnyPlacementTaps<T> AnyPlacement(
    const RowAndColumnTaps<typename AnyPlacementTaps<T>::BankReader>& bank) {
  AnyPlacementTaps<T> taps{};
  taps.placement = Placement::kConstantBank;
  taps.row_bank = bank.row;
  taps.column_bank = bank.column;
  return taps;
}
template <class T>
AnyPlacementTaps<T> AnyPlacement(const RowAndColumnTaps<GlobalTableReader<T>>& global) {
  AnyPlacementTaps<T> taps{};
  taps.placement = Placement::kGlobalMemory;
  taps.row_global = global.row.values;
  taps.column_global = global.column.values;
  return taps;
}
// taps[i] of the row taps (row) or the column taps.
template <class T>
struct AnyPlacementReader {
  const AnyPlacementTaps<T>& taps;
  bool row;
  __device__ __forceinline__ T operator[](int i) const {
    switch (taps.placement) {
      case Placement::kByValue:
        return taps.values[i];
      case Placement::kConstantBank:
        return row ? taps.row_bank[i] : taps.column_bank[i];
      default:
        return __ldg((row ? taps.row_global : taps.column_global) + i);
    }
  }
};
template <class T>
__device__ __forceinline__ AnyPlacementReader<T> RowTaps(const AnyPlacementTaps<T>& taps) {
  return {taps, true};
}
template <class T>
__device__ __forceinline__ AnyPlacementReader<T> ColumnTaps(const AnyPlacementTaps<T>& taps) {
  return {taps, false};
}

// The register kernel for `channels` (RegisterChannels), one launch of as many blocks as are
// resident.
template <class In, class T>
Status LaunchRegisterKernel(int device, cudaStream_t stream, const In* x, In* y,
                            const SeparableShape& shape, int channels,
                            const AnyPlacementTaps<T>& taps, TapLayout layout) {
  Status status;
  WithRegisterKernel(static_cast<int>(shape.kw), channels, [&](auto k, auto c) {
    constexpr auto kernel =
        SeparableRegisterKernel<In, T, AnyPlacementTaps<T>, decltype(k)::value, decltype(c)::value>;
    int resident = 0;
    status = ResidentBlocks<kernel>(kRegisterThreads, device, &resident);
    if (!status.ok()) return;
    constexpr int kWarps = kRegisterThreads / 32;
    Geometry g = MakeGeometry(shape, /*interleave=*/true, layout);
    PlanRegisterStrips<In>(&g, static_cast<std::int64_t>(resident) * kWarps);
    kernel<<<PersistentGrid((g.work + kWarps - 1) / kWarps, resident), kRegisterThreads, 0,
             stream>>>(x, y, g, taps);
    status =
        CudaStatus(CONSTMEM_CUDA_CALL(kKernelLaunch, cudaGetLastError()), "SeparableFilter launch");
  });
  return status;
}

template <class In, class T, class Taps, class Tile>
Status LaunchTile(int device, cudaStream_t stream, const In* x, In* y, Geometry g,
                  const Taps& taps) {
  constexpr auto kernel = SeparableKernel<In, T, Taps, Tile>;
  const SharedLayout<Tile, In, T> layout(g.interleaved, g.kw, g.kh);
  // Filters longer than a few taps need more than the 48 KiB a block gets without asking: the
  // device's most, asked once a device.
  static std::array<std::atomic<bool>, kMaxDevices> shared_memory_raised{};
  if (!shared_memory_raised[device].load(std::memory_order_relaxed)) {
    std::size_t most = 0;
    CONSTMEM_RETURN_IF_ERROR(MaxSharedBytesPerBlock(device, &most));
    CONSTMEM_RETURN_IF_CUDA_ERROR(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(most)),
        "cudaFuncSetAttribute(SeparableFilter kernel)");
    shared_memory_raised[device].store(true, std::memory_order_relaxed);
  }
  const std::size_t shared = layout.Bytes();
  // The occupancy of the last shared-memory size a device launched with: calls with one filter
  // ask the runtime once.
  static std::array<std::atomic<std::uint64_t>, kMaxDevices> last_occupancy{};
  const std::uint64_t last = last_occupancy[device].load(std::memory_order_relaxed);
  int per_sm = static_cast<int>(last & 0xFF), sms = 0;
  if ((last >> 8) != shared) {
    CONSTMEM_RETURN_IF_CUDA_ERROR(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, Tile::kThreads, shared),
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor(SeparableFilter kernel)");
    last_occupancy[device].store((static_cast<std::uint64_t>(shared) << 8) |
                                     static_cast<std::uint64_t>(std::min(per_sm, 255)),
                                 std::memory_order_relaxed);
  }
  CONSTMEM_RETURN_IF_ERROR(MultiprocessorCount(device, &sms));
  const std::int64_t resident = std::max(1, per_sm) * static_cast<std::int64_t>(sms);
  PlanTiles<Tile>(&g, resident, x, y);
  const dim3 grid = PersistentGrid(
      g.work, static_cast<int>(std::min<std::int64_t>(resident, std::numeric_limits<int>::max())));
  kernel<<<grid, Tile::kThreads, shared, stream>>>(x, y, g, taps);
  return CudaStatus(CONSTMEM_CUDA_CALL(kKernelLaunch, cudaGetLastError()),
                    "SeparableFilter launch");
}

// The kernels for `shape` with its taps read through `taps`, laid out as `layout` says.
template <class In, class T, class Taps>
Status LaunchKernels(int device, cudaStream_t stream, const In* x, In* y,
                     const SeparableShape& shape, const Taps& taps, TapLayout layout,
                     std::size_t shared_bytes_per_block) {
  if constexpr (sizeof(In) <= 4) {
    const int channels = RegisterChannels(shape, x, y);
    if (shape.kw <= CONSTMEM_SEPARABLE_REGISTER_MAX_TAPS && channels > 0) {
      return LaunchRegisterKernel<In, T>(device, stream, x, y, shape, channels,
                                         AnyPlacement<T>(taps), layout);
    }
  }
  std::size_t device_bytes = 0;
  CONSTMEM_RETURN_IF_ERROR(MaxSharedBytesPerBlock(device, &device_bytes));
  const std::size_t available = std::min(device_bytes, shared_bytes_per_block);
  bool interleave = false;
  switch (Fused(shape) ? FusedTileThreads<In, T>(shape, available, &interleave) : 0) {
    case LargeTile::kThreads:
      return LaunchTile<In, T, Taps, LargeTile>(device, stream, x, y,
                                                MakeGeometry(shape, interleave, layout), taps);
    case SmallTile::kThreads:
      return LaunchTile<In, T, Taps, SmallTile>(device, stream, x, y,
                                                MakeGeometry(shape, interleave, layout), taps);
  }
  // Longer filters, or no tile fits: the two passes.
  if (RowPassSharedBytes<T>() > available) {
    return Status(StatusCode::kFailedPrecondition,
                  "SeparableFilter's GPU kernels need more shared memory a block than the " +
                      std::to_string(available) + " bytes this GPU offers");
  }
  return LaunchTwoPass<In, T>(device, stream, x, y, shape, taps, layout);
}

template <class In>
Status CheckSeparableData(const SeparableShape& shape, const In* x, In* y) {
  if (x == nullptr || y == nullptr) return InvalidArgument("SeparableFilter: null data");
  // Offsets within a plane and a row are 32-bit in the kernel.
  if (shape.height > std::numeric_limits<int>::max() ||
      shape.width * shape.channels > std::numeric_limits<int>::max() / 2) {
    return InvalidArgument("SeparableFilter: rows of at most 2^30 elements and 2^31 rows");
  }
  return Status::Ok();
}

// Row and column taps both in device memory, never copied to a buffer of their own (which a graph
// nested in another, as XLA's command buffers nest them, could not allocate): both uploaded into
// one lease of the constant bank where it holds them, else read in place.
template <class In, class T>
Status LaunchFromDeviceTables(cudaStream_t stream, const In* x, In* y, const SeparableShape& shape,
                              const TableView<T>& row, const TableView<T>& column,
                              LaunchReport* report) {
  using BankOf = separable_taps_banks::Of<T>;
  bool capturing = false;
  CONSTMEM_RETURN_IF_ERROR(IsCapturing(stream, &capturing));
  int device = 0;
  if (capturing) {
    CONSTMEM_RETURN_IF_CUDA_ERROR(cudaGetDevice(&device), "cudaGetDevice");
  } else {
    CONSTMEM_RETURN_IF_ERROR(detail::DeviceOfStream(stream, &device));
  }
  CONSTMEM_RETURN_IF_ERROR(CheckDeviceOrdinal(device));
  ScopedDevice guard(device);
  CONSTMEM_RETURN_IF_ERROR(guard.status());
  const std::int64_t total = row.size + column.size;
  // A captured launch reads them in place: the bank is not the graph's to write.
  const Placement placement =
      capturing ? Placement::kGlobalMemory
                : SeparableFilterPlacement<T>(total, SourceKind::kDevice, shape.Elements());
  if (report != nullptr) {
    *report = LaunchReport(placement);
    report->captured = capturing;
  }
  const std::size_t no_limit = std::numeric_limits<std::size_t>::max();
  if (placement == Placement::kConstantBank) {
    Lease<T> lease;
    CONSTMEM_RETURN_IF_ERROR(
        BankOf::get().Acquire(stream, static_cast<std::size_t>(total), nullptr, &lease));
    CONSTMEM_RETURN_IF_ERROR(lease.UploadAt(0, row.values, row.size, SourceKind::kDevice));
    CONSTMEM_RETURN_IF_ERROR(
        lease.UploadAt(row.size, column.values, column.size, SourceKind::kDevice));
    Count(Counter::kConstantBankLaunch);
    using Reader = typename BankOf::Reader;
    const RowAndColumnTaps<Reader> taps{Reader{lease.offset()},
                                        Reader{lease.offset() + static_cast<int>(row.size)}};
    CONSTMEM_RETURN_IF_ERROR(
        (LaunchKernels<In, T>(device, stream, x, y, shape, taps, SeparateTaps(shape), no_limit)));
    return lease.Release();
  }
  Count(capturing ? Counter::kCapturedLaunch : Counter::kGlobalMemoryLaunch);
  const RowAndColumnTaps<GlobalTableReader<T>> taps{{row.values}, {column.values}};
  return LaunchKernels<In, T>(device, stream, x, y, shape, taps, SeparateTaps(shape), no_limit);
}

}  // namespace

template <class T>
Placement SeparableFilterPlacement(std::int64_t count, SourceKind source,
                                   std::int64_t launch_elements) {
  return ChoosePlacementFor<T>(count, source, SeparableLimits<T>(), TableAccess::kUniform,
                               launch_elements);
}

template <class In>
int SeparableFilterBlockThreads(const SeparableShape& shape, std::size_t shared_bytes_per_block) {
  using T = ComputeTypeOf<In>;
  bool interleave = false;
  const int tile =
      Fused(shape) ? FusedTileThreads<In, T>(shape, shared_bytes_per_block, &interleave) : 0;
  if (tile != 0) return tile;
  return RowPassSharedBytes<T>() <= shared_bytes_per_block ? kTwoPassThreads : 0;
}

template <class In, class T>
Status LaunchSeparableFilterWithSharedMemory(GpuStream stream, const In* x, In* y,
                                             const SeparableShape& shape, const TableView<T>& taps,
                                             Placement placement,
                                             std::size_t shared_bytes_per_block,
                                             LaunchReport* report) {
  static_assert(std::is_same<T, ComputeTypeOf<In>>::value, "taps of the compute type");
  if (report != nullptr) *report = LaunchReport(placement);
  CONSTMEM_RETURN_IF_ERROR(CheckSeparableArguments(shape, taps.size));
  if (taps.values == nullptr && taps.size > 0) return InvalidArgument("SeparableFilter: null taps");
  if (shape.Elements() == 0) return Status::Ok();
  CONSTMEM_RETURN_IF_ERROR(CheckSeparableData(shape, x, y));
  return LaunchWithTable<DefaultByValueTable<T>, separable_taps_banks::Of<T>>(
      stream, taps, placement,
      [&](int device, const auto& reader) {
        using Reader = std::decay_t<decltype(reader)>;
        if constexpr (std::is_same<Reader, DefaultByValueTable<T>>::value) {
          return LaunchKernels<In, T>(device, stream, x, y, shape, reader, JoinedTaps(shape),
                                      shared_bytes_per_block);
        } else {
          return LaunchKernels<In, T>(device, stream, x, y, shape,
                                      RowAndColumnTaps<Reader>{reader, reader}, JoinedTaps(shape),
                                      shared_bytes_per_block);
        }
      },
      report);
}

template <class In, class T>
Status LaunchSeparableFilterWithPlacement(GpuStream stream, const In* x, In* y,
                                          const SeparableShape& shape, const TableView<T>& taps,
                                          Placement placement, LaunchReport* report) {
  return LaunchSeparableFilterWithSharedMemory(stream, x, y, shape, taps, placement,
                                               std::numeric_limits<std::size_t>::max(), report);
}

template <class In, class T>
Status LaunchSeparableFilter(GpuStream stream, const In* x, In* y, const SeparableShape& shape,
                             const TableView<T>& taps, LaunchReport* report) {
  return LaunchSeparableFilterWithPlacement(
      stream, x, y, shape, taps,
      SeparableFilterPlacement<T>(taps.size, taps.source, shape.Elements()), report);
}

template <class In, class T>
Status LaunchSeparableFilter(GpuStream stream, const In* x, In* y, const SeparableShape& shape,
                             const TableView<T>& row, const TableView<T>& column,
                             LaunchReport* report) {
  const std::int64_t blocks = shape.per_image_taps ? shape.images : 1;
  if (row.size != blocks * shape.kw || column.size != blocks * shape.kh) {
    return InvalidArgument("SeparableFilter needs " + std::to_string(blocks * shape.kw) +
                           " row taps and " + std::to_string(blocks * shape.kh) +
                           " column taps; got " + std::to_string(row.size) + " and " +
                           std::to_string(column.size));
  }
  if (row.values == nullptr || column.values == nullptr) {
    return InvalidArgument("SeparableFilter: null taps");
  }
  const bool row_host = row.source != SourceKind::kDevice;
  const bool column_host = column.source != SourceKind::kDevice;
  if (row_host && column_host) {
    const std::vector<T> joined = JoinSeparableTaps(shape, row.values, column.values);
    const TableView<T> table{joined.data(), shape.TableSize(), SourceKind::kPageableHost,
                             row.repeats && column.repeats};
    return LaunchSeparableFilter(stream, x, y, shape, table, report);
  }
  if (shape.Elements() == 0) return Status::Ok();
  CONSTMEM_RETURN_IF_ERROR(CheckSeparableData(shape, x, y));
  if (!row_host && !column_host) {
    return LaunchFromDeviceTables(stream, x, y, shape, row, column, report);
  }
  // One table from the host, one from the device: the host one copied to the device first, into a
  // buffer freed on the stream after the launch.
  bool capturing = false;
  CONSTMEM_RETURN_IF_ERROR(IsCapturing(stream, &capturing));
  if (capturing) {
    return InvalidArgument(
        "under CUDA graph capture SeparableFilter takes its row and column taps both from the host "
        "or both from the device");
  }
  int device = 0;
  CONSTMEM_RETURN_IF_ERROR(detail::DeviceOfStream(stream, &device));
  ScopedDevice guard(device);
  CONSTMEM_RETURN_IF_ERROR(guard.status());
  const TableView<T>& host = row_host ? row : column;
  const std::size_t host_bytes = static_cast<std::size_t>(host.size) * sizeof(T);
  StreamOrderedBuffer buffer;
  CONSTMEM_RETURN_IF_ERROR(buffer.Allocate(stream, device, host_bytes));
  CONSTMEM_RETURN_IF_ERROR(
      CopyTableToDevice(buffer.data(), host.values, host_bytes, host.source, stream));
  const TableView<T> uploaded{static_cast<const T*>(buffer.data()), host.size, SourceKind::kDevice};
  CONSTMEM_RETURN_IF_ERROR(LaunchFromDeviceTables(stream, x, y, shape, row_host ? uploaded : row,
                                                  row_host ? column : uploaded, report));
  return buffer.Release();  // the free is enqueued after the launch
}

#define CONSTMEM_INSTANTIATE_SEPARABLE(In, T)                                                    \
  template Status LaunchSeparableFilter<In, T>(GpuStream, const In*, In*, const SeparableShape&, \
                                               const TableView<T>&, LaunchReport*);              \
  template Status LaunchSeparableFilter<In, T>(GpuStream, const In*, In*, const SeparableShape&, \
                                               const TableView<T>&, const TableView<T>&,         \
                                               LaunchReport*);                                   \
  template Status LaunchSeparableFilterWithPlacement<In, T>(                                     \
      GpuStream, const In*, In*, const SeparableShape&, const TableView<T>&, Placement,          \
      LaunchReport*);                                                                            \
  template Status LaunchSeparableFilterWithSharedMemory<In, T>(                                  \
      GpuStream, const In*, In*, const SeparableShape&, const TableView<T>&, Placement,          \
      std::size_t, LaunchReport*);                                                               \
  template int SeparableFilterBlockThreads<In>(const SeparableShape&, std::size_t);
CONSTMEM_INSTANTIATE_SEPARABLE(float, float)
CONSTMEM_INSTANTIATE_SEPARABLE(double, double)
CONSTMEM_INSTANTIATE_SEPARABLE(Float16, float)
CONSTMEM_INSTANTIATE_SEPARABLE(BFloat16, float)
CONSTMEM_INSTANTIATE_SEPARABLE(std::uint8_t, float)
#undef CONSTMEM_INSTANTIATE_SEPARABLE
template Placement SeparableFilterPlacement<float>(std::int64_t, SourceKind, std::int64_t);
template Placement SeparableFilterPlacement<double>(std::int64_t, SourceKind, std::int64_t);

}  // namespace ops
}  // namespace constmem
