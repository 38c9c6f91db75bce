// SPDX-License-Identifier: Apache-2.0
// FirFilter's CUDA kernel and launcher. No framework header reaches nvcc.
//
// A block computes a tile of consecutive outputs of one row: it stages the tile's samples plus the
// k-1 samples of halo in shared memory (zeros outside the row), then each thread computes
// kOutputs consecutive outputs. The taps are read with warp-uniform indices (constant memory's
// broadcast); each tap feeds kOutputs FMAs from a window of samples that slides through registers,
// so shared memory delivers one sample per thread per tap, a fraction of what the FMAs consume.
// The outputs go back through shared memory to leave in coalesced stores.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "constmem/constmem.cuh"
#include "constmem/dispatch.cuh"
#include "fir_filter/fir_filter_functor.h"
#include "fir_filter/fir_filter_launcher.h"

namespace constmem {
namespace ops {
namespace {

// Four slots of 512 taps per dtype; a longer filter takes a run of slots. 8 + 16 KiB.
constexpr std::size_t kSlotTaps = kFirMaxTaps / 4;
constexpr int kSlots = 4;

}  // namespace
}  // namespace ops
}  // namespace constmem

CONSTMEM_DEFINE_BANK(fir_taps_f32, float, constmem::ops::kSlotTaps, constmem::ops::kSlots);
CONSTMEM_DEFINE_BANK(fir_taps_f64, double, constmem::ops::kSlotTaps, constmem::ops::kSlots);

namespace constmem {
namespace ops {
namespace {

template <class T>
struct FirBank;
template <>
struct FirBank<float> {
  static Bank<float>& bank() { return fir_taps_f32(); }
  using Reader = fir_taps_f32_reader;
};
template <>
struct FirBank<double> {
  static Bank<double>& bank() { return fir_taps_f64(); }
  using Reader = fir_taps_f64_reader;
};

template <class T>
using FirByValue = ByValueTable<T, kDefaultByValueBytes / sizeof(T)>;

constexpr int kThreads = 256;

// Per thread: 64 bytes of outputs (16 float or 8 double) in registers and a window of twice that
// many samples. The macro exists to compare shapes on a GPU.
#ifndef CONSTMEM_FIR_OUTPUT_BYTES
#define CONSTMEM_FIR_OUTPUT_BYTES 64
#endif
template <class T>
struct FirTuning {
  static constexpr int kOutputs = CONSTMEM_FIR_OUTPUT_BYTES / static_cast<int>(sizeof(T));
  static constexpr int kLanes = 16 / static_cast<int>(sizeof(T));  // one 16-byte vector
  static constexpr int kTile = kThreads * kOutputs;
};

// Shared-memory index of sample e: one vector of padding after every kOutputs samples, so that
// the 16-byte window loads of a quarter warp (threads kOutputs samples apart) hit distinct banks.
template <class T>
__device__ __forceinline__ int Padded(int e) {
  using Tune = FirTuning<T>;
  return e + (e / Tune::kOutputs) * Tune::kLanes;
}

// Samples staged per tile: the tile, the halo, and one window of slack that the last full chunk
// of taps reads (as zeros) past the end.
template <class T>
__host__ __device__ constexpr int StagedSamples(int taps) {
  return FirTuning<T>::kTile + taps - 1 + 2 * FirTuning<T>::kOutputs;
}
template <class T>
constexpr std::size_t SharedBytes(int taps) {
  const int staged = StagedSamples<T>(taps);
  const int padded = staged + (staged / FirTuning<T>::kOutputs + 1) * FirTuning<T>::kLanes;
  return static_cast<std::size_t>(padded) * sizeof(T);
}
// Every filter fits the shared memory a block gets without opting in to more.
static_assert(SharedBytes<float>(kFirMaxTaps) <= 48 * 1024, "float tile too large");
static_assert(SharedBytes<double>(kFirMaxTaps) <= 48 * 1024, "double tile too large");

#ifndef CONSTMEM_FIR_MIN_BLOCKS
#define CONSTMEM_FIR_MIN_BLOCKS 4
#endif
template <class T, class Taps>
__global__ void __launch_bounds__(kThreads, CONSTMEM_FIR_MIN_BLOCKS)
    FirKernel(const T* x, T* y, std::int64_t rows, std::int64_t length, std::int64_t outputs,
              int tap_count, int pad_left, const __grid_constant__ Taps taps) {
  using Tune = FirTuning<T>;
  using V = typename Vector16<T>::type;
  constexpr int R = Tune::kOutputs;
  constexpr int L = Tune::kLanes;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  T* staged = reinterpret_cast<T*>(shared_bytes);
  const int staged_count = StagedSamples<T>(tap_count);
  const std::int64_t tiles_per_row = (outputs + Tune::kTile - 1) / Tune::kTile;
  const int base = static_cast<int>(threadIdx.x) * R;
  // Rows start on 16-byte boundaries: the staging reads whole vectors.
  const bool vector_rows = reinterpret_cast<std::uintptr_t>(x) % 16 == 0 && length % L == 0;
  const bool vector_output = reinterpret_cast<std::uintptr_t>(y) % 16 == 0 && outputs % L == 0;

  // With vector rows, each thread loads its share of the next tile's samples into registers while
  // it computes the current tile, so that memory and arithmetic overlap (a tile's worth: the
  // halo and the padding past a row's ends are read when the tile is staged).
  constexpr int kPrefetch = Tune::kTile / L / kThreads;
  const std::int64_t tile_count = rows * tiles_per_row;
  V prefetched[kPrefetch];
  // A tile's samples within its row, and the aligned vectors that hold them.
  auto span_of = [&](std::int64_t tile, std::int64_t* first_sample, std::int64_t* lo,
                     std::int64_t* hi) {
    const std::int64_t first_output = (tile % tiles_per_row) * Tune::kTile;
    *first_sample = first_output - pad_left;
    *lo = *first_sample > 0 ? *first_sample : 0;
    *hi = *first_sample + staged_count < length ? *first_sample + staged_count : length;
  };
  auto prefetch = [&](std::int64_t tile) {
    std::int64_t first_sample, lo, hi;
    span_of(tile, &first_sample, &lo, &hi);
    const V* row_vectors = reinterpret_cast<const V*>(x + tile / tiles_per_row * length);
    const std::int64_t first_vector = lo / L, end_vector = (hi + L - 1) / L;
#pragma unroll
    for (int q = 0; q < kPrefetch; ++q) {
      const std::int64_t v = first_vector + q * kThreads + threadIdx.x;
      if (v < end_vector) prefetched[q] = row_vectors[v];
    }
  };
  if (vector_rows && blockIdx.x < tile_count) prefetch(blockIdx.x);

  for (std::int64_t tile = blockIdx.x; tile < tile_count; tile += gridDim.x) {
    const std::int64_t row = tile / tiles_per_row;
    const std::int64_t first_output = (tile % tiles_per_row) * Tune::kTile;
    const T* row_x = x + row * length;
    std::int64_t first_sample, lo, hi;
    span_of(tile, &first_sample, &lo, &hi);
    __syncthreads();  // the previous tile's readers are done with the staged samples
    if (vector_rows) {
      // Vector v's lanes go to their places among the staged samples (zeros where the tile
      // reaches past either end of the row are written below).
      auto scatter = [&](std::int64_t v, const V& value) {
        const T* lanes = reinterpret_cast<const T*>(&value);
        const int e0 = static_cast<int>(v * L - first_sample);
#pragma unroll
        for (int l = 0; l < L; ++l) {
          if (e0 + l >= 0 && e0 + l < staged_count) staged[Padded<T>(e0 + l)] = lanes[l];
        }
      };
      const std::int64_t first_vector = lo / L, end_vector = (hi + L - 1) / L;
      const V* row_vectors = reinterpret_cast<const V*>(row_x);
#pragma unroll
      for (int q = 0; q < kPrefetch; ++q) {
        const std::int64_t v = first_vector + q * kThreads + threadIdx.x;
        if (v < end_vector) scatter(v, prefetched[q]);
      }
      for (std::int64_t v = first_vector + kPrefetch * kThreads + threadIdx.x; v < end_vector;
           v += kThreads) {
        scatter(v, row_vectors[v]);
      }
      const int zeros_before = static_cast<int>(lo - first_sample);
      const int zeros_from = static_cast<int>(hi - first_sample);
      for (int e = threadIdx.x; e < zeros_before; e += kThreads) staged[Padded<T>(e)] = T(0);
      for (int e = zeros_from + threadIdx.x; e < staged_count; e += kThreads) {
        staged[Padded<T>(e)] = T(0);
      }
    } else {
#pragma unroll 4
      for (int e = threadIdx.x; e < staged_count; e += kThreads) {
        const std::int64_t s = first_sample + e;
        staged[Padded<T>(e)] = s >= 0 && s < length ? row_x[s] : T(0);
      }
    }
    __syncthreads();
    if (vector_rows && tile + gridDim.x < tile_count) prefetch(tile + gridDim.x);

    T acc[R];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = T(0);
    T window[2 * R];
    auto load_half = [&](int half, int chunk) {
      // Samples [base + chunk, base + chunk + R): one padded block (base and chunk are multiples
      // of R), R / L vectors.
      const T* block = staged + Padded<T>(base + chunk);
#pragma unroll
      for (int q = 0; q < R / L; ++q) {
        const V v = reinterpret_cast<const V*>(block)[q];
        const T* lanes = reinterpret_cast<const T*>(&v);
#pragma unroll
        for (int l = 0; l < L; ++l) window[half * R + q * L + l] = lanes[l];
      }
    };
    load_half(0, 0);
    int j0 = 0;
    for (; j0 + R <= tap_count; j0 += R) {
      load_half(1, j0 + R);
#pragma unroll
      for (int jj = 0; jj < R; ++jj) {
        const T tap = taps[j0 + jj];
#pragma unroll
        for (int r = 0; r < R; ++r) acc[r] = fma(window[r + jj], tap, acc[r]);
      }
#pragma unroll
      for (int r = 0; r < R; ++r) window[r] = window[R + r];
    }
    if (j0 < tap_count) {  // the last taps, fewer than R: their samples are in the window
      load_half(1, j0 + R);
      const int rest = tap_count - j0;
      T rest_taps[R];
#pragma unroll
      for (int jj = 0; jj < R; ++jj) rest_taps[jj] = jj < rest ? taps[j0 + jj] : T(0);
#pragma unroll
      for (int jj = 0; jj < R; ++jj) {
        if (jj < rest) {
#pragma unroll
          for (int r = 0; r < R; ++r) acc[r] = fma(window[r + jj], rest_taps[jj], acc[r]);
        }
      }
    }

    // The outputs leave through shared memory, so that a warp's stores are contiguous: written
    // straight from registers, each 16-byte store would land 64 bytes from its neighbour's and
    // every sector would be written in halves.
    __syncthreads();  // every thread is done reading the staged samples
#pragma unroll
    for (int q = 0; q < R / L; ++q) {
      V v;
      T* lanes = reinterpret_cast<T*>(&v);
#pragma unroll
      for (int l = 0; l < L; ++l) lanes[l] = acc[q * L + l];
      reinterpret_cast<V*>(staged + Padded<T>(base))[q] = v;
    }
    __syncthreads();
    T* tile_y = y + row * outputs + first_output;
    const std::int64_t remaining = outputs - first_output;
    const int tile_outputs = remaining < Tune::kTile ? static_cast<int>(remaining) : Tune::kTile;
    if (vector_output) {
      const int vectors = tile_outputs / L;
      for (int v = threadIdx.x; v < vectors; v += kThreads) {
        reinterpret_cast<V*>(tile_y)[v] = *reinterpret_cast<const V*>(staged + Padded<T>(v * L));
      }
      for (int e = vectors * L + threadIdx.x; e < tile_outputs; e += kThreads) {
        tile_y[e] = staged[Padded<T>(e)];
      }
    } else {
      for (int e = threadIdx.x; e < tile_outputs; e += kThreads) tile_y[e] = staged[Padded<T>(e)];
    }
  }
}

template <class T>
StrategyLimits FirLimits() {
  StrategyLimits limits;
  limits.constant_bank_bytes = kFirMaxTaps * sizeof(T);
  return limits;
}

template <class T, class Taps>
Status LaunchKernel(int device, cudaStream_t stream, const T* x, T* y, const FirShape& shape,
                    const Taps& taps) {
  constexpr auto kernel = FirKernel<T, Taps>;
  const std::size_t shared = SharedBytes<T>(static_cast<int>(shape.taps));
  const std::int64_t tiles =
      shape.rows * ((shape.outputs + FirTuning<T>::kTile - 1) / FirTuning<T>::kTile);
  int per_sm = 0, sms = 0;
  CONSTMEM_RETURN_IF_CUDA_ERROR(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, shared),
      "cudaOccupancyMaxActiveBlocksPerMultiprocessor(FirKernel)");
  CONSTMEM_RETURN_IF_CUDA_ERROR(
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
      "cudaDeviceGetAttribute");
  const dim3 grid = PersistentGrid(tiles, std::max(1, per_sm) * sms);
  kernel<<<grid, kThreads, shared, stream>>>(x, y, shape.rows, shape.length, shape.outputs,
                                             static_cast<int>(shape.taps),
                                             static_cast<int>(shape.pad_left), taps);
  return CudaStatus(CONSTMEM_CUDA_CALL(kKernelLaunch, cudaGetLastError()), "FirFilter launch");
}

}  // namespace

template <class T>
Placement FirFilterPlacement(std::int64_t count, SourceKind source) {
  return ChoosePlacement(static_cast<std::size_t>(count) * sizeof(T), LocationOf(source),
                         FirLimits<T>());
}

template <class T>
Status LaunchFirFilterWithPlacement(GpuStream stream, const T* x, T* y, const FirShape& shape,
                                    const TableView<T>& taps, Placement placement,
                                    LaunchReport* report) {
  if (report != nullptr) *report = LaunchReport{placement, false};
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
  return LaunchWithTable<FirByValue<T>, typename FirBank<T>::Reader>(
      stream, taps, placement, FirBank<T>::bank(),
      [&](int device, const auto& reader) {
        return LaunchKernel(device, stream, x, y, shape, reader);
      },
      report);
}

template <class T>
Status LaunchFirFilter(GpuStream stream, const T* x, T* y, const FirShape& shape,
                       const TableView<T>& taps, LaunchReport* report) {
  return LaunchFirFilterWithPlacement(stream, x, y, shape, taps,
                                      FirFilterPlacement<T>(taps.size, taps.source), report);
}

#define CONSTMEM_INSTANTIATE_FIR(T)                                                         \
  template Placement FirFilterPlacement<T>(std::int64_t, SourceKind);                       \
  template Status LaunchFirFilter<T>(GpuStream, const T*, T*, const FirShape&,              \
                                     const TableView<T>&, LaunchReport*);                   \
  template Status LaunchFirFilterWithPlacement<T>(GpuStream, const T*, T*, const FirShape&, \
                                                  const TableView<T>&, Placement, LaunchReport*);
CONSTMEM_INSTANTIATE_FIR(float)
CONSTMEM_INSTANTIATE_FIR(double)
#undef CONSTMEM_INSTANTIATE_FIR

}  // namespace ops
}  // namespace constmem
