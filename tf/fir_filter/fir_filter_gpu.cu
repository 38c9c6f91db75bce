// SPDX-License-Identifier: Apache-2.0
// FirFilter's CUDA kernel and launcher. No framework header reaches nvcc.
//
// A block computes a tile of consecutive outputs of one row: it stages the tile's samples plus the
// k-1 samples of halo in shared memory as whole 16-byte vectors (zeros outside the row), then each
// thread computes kOutputs consecutive outputs. The taps are read with warp-uniform indices
// (constant memory's broadcast); each tap feeds kOutputs FMAs from two windows of samples held in
// registers, so shared memory delivers one sample per thread per tap, a fraction of what the FMAs
// consume. The outputs go back through shared memory to leave in coalesced stores.
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

// Samples staged per tile, from the vector boundary at or before the tile's first sample: up to
// L - 1 samples of alignment, the tile, the halo, and two windows of slack that the last chunk of
// taps reads (as zeros) past the end; a whole number of vectors.
template <class T>
__host__ __device__ constexpr int StagedSamples(int taps) {
  constexpr int L = FirTuning<T>::kLanes;
  return (FirTuning<T>::kTile + taps + L - 1 + 2 * FirTuning<T>::kOutputs + L - 1) / L * L;
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

// Three blocks a multiprocessor leave 85 registers a thread: the next tile's samples wait in
// registers during the tap loop without spilling (at four, they spill).
#ifndef CONSTMEM_FIR_MIN_BLOCKS
#define CONSTMEM_FIR_MIN_BLOCKS 3
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
  // Staged sample e is row sample first_output - pad_left - shift + e: staging starts on a vector
  // boundary, and output i's taps meet staged samples i + shift .. i + shift + tap_count - 1.
  const int shift = (L - pad_left % L) % L;
  const int shifted_taps = tap_count + shift;
  const int staged_count = StagedSamples<T>(tap_count);
  const int base = static_cast<int>(threadIdx.x) * R;
  // Rows start on 16-byte boundaries: the staging reads and writes whole vectors.
  const bool vector_rows = reinterpret_cast<std::uintptr_t>(x) % 16 == 0 && length % L == 0;
  const bool vector_output = reinterpret_cast<std::uintptr_t>(y) % 16 == 0 && outputs % L == 0;

  // Tiles are walked as (row, column) pairs, stepping without a 64-bit division per tile.
  const std::int64_t tiles_per_row = (outputs + Tune::kTile - 1) / Tune::kTile;
  const std::int64_t row_step = gridDim.x / tiles_per_row;
  const std::int64_t column_step = gridDim.x % tiles_per_row;
  auto advance = [&](std::int64_t* row, std::int64_t* column) {
    *row += row_step;
    *column += column_step;
    if (*column >= tiles_per_row) {
      *column -= tiles_per_row;
      ++*row;
    }
  };
  // Row vector holding staged sample L * k of the tile in `column` (negative before the row).
  const std::int64_t row_vectors_count = length / L;
  const std::int64_t lead_vectors = (pad_left + shift) / L;
  auto first_vector = [&](std::int64_t column) {
    return column * (Tune::kTile / L) - lead_vectors;
  };
  const int staged_vectors = staged_count / L;
  auto fetch = [&](const V* row_vectors, std::int64_t v) {
    return v >= 0 && v < row_vectors_count ? row_vectors[v] : V{};
  };
  // Staged vector k lives at vector k + k / (R / L): one vector of padding after every R samples,
  // so that the 16-byte window loads of a quarter warp (threads R samples apart) hit distinct
  // banks.
  V* staged_vector = reinterpret_cast<V*>(shared_bytes);
  auto padded_vector = [](int k) { return k + k / (R / L); };

  // With vector rows, each thread loads its share of the next tile's samples into registers while
  // it computes the current tile, so that memory and arithmetic overlap (a long halo's remainder
  // is read when the tile is staged).
  constexpr int kPrefetch = Tune::kTile / L / kThreads;
  V prefetched[kPrefetch];
  unsigned prefetched_outside = 0;  // bit q: vector q lies outside the row, staged as zeros
  auto prefetch = [&](std::int64_t row, std::int64_t column) {
    const V* row_vectors = reinterpret_cast<const V*>(x + row * length);
    const std::int64_t v0 = first_vector(column);
    prefetched_outside = 0;
#pragma unroll
    for (int q = 0; q < kPrefetch; ++q) {
      const std::int64_t v = v0 + q * kThreads + static_cast<int>(threadIdx.x);
      if (v >= 0 && v < row_vectors_count) {
        prefetched[q] = row_vectors[v];
      } else {
        prefetched_outside |= 1u << q;
      }
    }
  };
  std::int64_t row = blockIdx.x / tiles_per_row, column = blockIdx.x % tiles_per_row;
  if (vector_rows && row < rows) prefetch(row, column);

  for (; row < rows; advance(&row, &column)) {
    const std::int64_t first_output = column * Tune::kTile;
    const T* row_x = x + row * length;
    __syncthreads();  // the previous tile's readers are done with the staged samples
    if (vector_rows) {
#pragma unroll
      for (int q = 0; q < kPrefetch; ++q) {
        const int k = q * kThreads + static_cast<int>(threadIdx.x);
        if (k < staged_vectors) {
          staged_vector[padded_vector(k)] = prefetched_outside & (1u << q) ? V{} : prefetched[q];
        }
      }
      const V* row_vectors = reinterpret_cast<const V*>(row_x);
      const std::int64_t v0 = first_vector(column);
      for (int k = kPrefetch * kThreads + static_cast<int>(threadIdx.x); k < staged_vectors;
           k += kThreads) {
        staged_vector[padded_vector(k)] = fetch(row_vectors, v0 + k);
      }
    } else {
      const std::int64_t first_sample = first_output - pad_left - shift;
#pragma unroll 4
      for (int e = threadIdx.x; e < staged_count; e += kThreads) {
        const std::int64_t s = first_sample + e;
        staged[Padded<T>(e)] = s >= 0 && s < length ? row_x[s] : T(0);
      }
    }
    __syncthreads();
    if (vector_rows) {
      std::int64_t next_row = row, next_column = column;
      advance(&next_row, &next_column);
      if (next_row < rows) prefetch(next_row, next_column);
    }

    // Chunks of R shifted taps, c .. c + R - 1, each meeting the samples of two windows: `lo`
    // (staged samples base + c ..) and `hi` (the next R). The windows trade places from one chunk
    // to the next, so no sample moves between registers.
    T acc[R];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = T(0);
    T window_a[R], window_b[R];
    auto load = [&](T(&window)[R], int c) {
      const V* block = reinterpret_cast<const V*>(staged + Padded<T>(base + c));
#pragma unroll
      for (int q = 0; q < R / L; ++q) {
        const V v = block[q];
        const T* lanes = reinterpret_cast<const T*>(&v);
#pragma unroll
        for (int l = 0; l < L; ++l) window[q * L + l] = lanes[l];
      }
    };
    auto chunk = [&](const T(&lo)[R], const T(&hi)[R], int c) {
      if (c >= shift && c + R <= shifted_taps) {
#pragma unroll
        for (int jj = 0; jj < R; ++jj) {
          const T tap = taps[c - shift + jj];
#pragma unroll
          for (int r = 0; r < R; ++r)
            acc[r] = fma(r + jj < R ? lo[r + jj] : hi[r + jj - R], tap, acc[r]);
        }
      } else {  // the first or the last chunk: only the shifted taps in [shift, shifted_taps)
#pragma unroll
        for (int jj = 0; jj < R; ++jj) {
          const int j = c + jj - shift;
          if (j >= 0 && j < tap_count) {
            const T tap = taps[j];
#pragma unroll
            for (int r = 0; r < R; ++r) {
              acc[r] = fma(r + jj < R ? lo[r + jj] : hi[r + jj - R], tap, acc[r]);
            }
          }
        }
      }
    };
    load(window_a, 0);
    for (int c = 0; c < shifted_taps; c += 2 * R) {
      load(window_b, c + R);
      chunk(window_a, window_b, c);
      if (c + R >= shifted_taps) break;
      load(window_a, c + 2 * R);
      chunk(window_b, window_a, c + R);
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
