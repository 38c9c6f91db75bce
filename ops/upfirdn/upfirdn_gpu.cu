// SPDX-License-Identifier: Apache-2.0
// Upfirdn's CUDA kernels and launcher. No framework header reaches nvcc.
//
// Polyphase (upfirdn_functor.h): output c + s * P has phase (c * down) mod up and base
// (c * down) div up + s * Q, so a tile of S values of s holds S * P consecutive outputs, all of
// whose samples lie in S * Q consecutive input samples plus ceil(k / up) - 1 of halo. A block
// stages a tile's samples in shared memory (asynchronous copies, issued while the block computes
// the tile before from a second buffer), computes its outputs into shared memory, and writes them
// out in coalesced stores: each input sample is read from memory about once (the halo twice),
// each output written once.
//
// A thread takes 7 outputs of one phase with consecutive s (their bases Q apart) and walks the
// phase's taps in ascending order, each tap read once for the 7. Where Q is 1 to 3 the samples of
// a chunk of taps come into registers once for all 7 outputs (a window of 6 Q + U samples for
// 7 U FMAs) instead of once per FMA. Which outputs the lanes of a warp take is the placement
// question (upfirdn_launcher.h, UpfirdnArrangement): one phase per warp, so that every lane reads
// the same tap (constant memory's broadcast, by value or from a bank), or consecutive phases per
// warp with the taps in shared memory.
//
// Shapes whose smallest tile does not fit shared memory (a long filter at a small `up`, whose halo
// of ceil(k / up) samples a tile stages, or rates whose P + Q samples and outputs do not fit) or
// whose indices pass int run a direct kernel instead: one output a thread over a grid-stride loop,
// samples and taps read where they are (taps staged in shared memory only by that placement), the
// same fused multiply-adds in the same order.
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
#include "upfirdn/upfirdn_functor.h"
#include "upfirdn/upfirdn_launcher.h"

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

// Threads a block: up to 256, fewer where that leaves fewer of them idle for a tile's items
// (BlockThreads).
constexpr int kThreads = 256;
// Outputs a thread: odd, so that the samples of lanes 7 Q apart fall in distinct banks for odd Q.
constexpr int kOutputs = 7;
// Taps a chunk: the window a chunk loads holds 6 Q + kChunk samples for 7 kChunk FMAs.
template <class T>
constexpr int kChunk = sizeof(T) == 4 ? 16 : 8;
// Shared memory for a tile's buffers (two of samples, one of outputs), not counting the halo of
// ceil(k / up) - 1 samples each sample buffer carries, nor the taps staged apart: with the halo
// inside the budget, a long filter at a small `up` (4,096 taps at 1/3) would leave room for one
// output a tile and read its samples a thousand times over.
constexpr std::size_t kTileBudgetBytes = 32 * 1024;
// The most shared memory the smallest tile of the tiled kernel may take beside the staged taps,
// within what the GPU offers: shapes that need more run the direct kernel. 96 KiB: every shape of
// rates up to 1,024 and 4,096 taps is tiled on a GPU of compute capability 9.0 (227 KiB a block),
// and those whose taps are not staged on 8.x too (99 KiB and more).
constexpr std::size_t kTiledMostBytes = 96 * 1024;

// The staged samples of a tile: local index e is sample tile_first_base - (most_terms - 1) -
// kChunk + e; the kChunk in front are never read for a term (a last, partial chunk's window may
// reach into them). Kernels with a run-time Q (kQ = 0) pad one element after every 32, so that
// lanes whose samples lie a multiple of 32 apart (Q = 160: 7 Q = 35 * 32) do not meet in one bank;
// the others address with constant offsets, and their lanes, 7 Q apart, meet at most 2-way (Q 2).
template <int kQ>
__host__ __device__ constexpr int Slot(int e) {
  return kQ == 0 ? e + (e >> 5) : e;
}

// A launch's geometry, the same for every tile.
struct Geometry {
  std::int64_t length;         // n
  std::int64_t outputs;        // L
  std::int64_t tiles_per_row;  // ceil(ceil(L / P) / S)
  std::int64_t tiles;          // rows * tiles_per_row
  int taps, up, down;
  int period, stride;  // P, Q
  int most_terms;      // ceil(k / up)
  int tile_s;          // S
  int staged;          // samples staged a tile: kChunk + most_terms - 1 + S * Q
  int in_elements;     // elements of a sample buffer
  int tiles_offset;    // bytes before the tile buffers (the staged taps)
};

// Output `e` (local index of its base) of one phase, exactly: the terms inside the row and the
// phase, m ascending.
template <int kQ, class T, class Taps>
__device__ __forceinline__ T ExactOutput(const T* in, int e, std::int64_t b, int p, int terms,
                                         std::int64_t length, int up, const Taps& taps) {
  const std::int64_t past = b - length + 1;  // terms m < past meet samples past the row's end
  const int lo = past <= 0 ? 0 : past >= terms ? terms : static_cast<int>(past);
  const int hi = b < terms - 1 ? static_cast<int>(b) : terms - 1;
  T acc = T(0);
  for (int m = lo; m <= hi; ++m) acc = fma(in[Slot<kQ>(e - m)], taps[p + m * up], acc);
  return acc;
}

// kOutputs outputs of one phase whose every term is inside the row: bases at local e0 + r * q.
template <int kQ, class T, class Taps>
__device__ __forceinline__ void InteriorOutputs(const T* in, int e0, int q, int p, int up,
                                                int terms, const Taps& taps, T (&acc)[kOutputs]) {
  constexpr int U = kChunk<T>;
  int tap = p;
  int m0 = 0;
  if constexpr (kQ > 0) {
    // A window of samples e0 - m0 - (U - 1) ... e0 + (kOutputs - 1) Q - m0 in registers: term
    // m0 + j of output r is window[U - 1 - j + r Q].
    constexpr int W = (kOutputs - 1) * kQ + U;
    auto apply = [&](auto guarded) {
      T window[W];
      const int first = e0 - m0 - (U - 1);
#pragma unroll
      for (int w = 0; w < W; ++w) window[w] = in[first + w];
#pragma unroll
      for (int j = 0; j < U; ++j) {
        if (decltype(guarded)::value && m0 + j >= terms) break;
        const T h = taps[tap + j * up];
#pragma unroll
        for (int r = 0; r < kOutputs; ++r) acc[r] = fma(window[U - 1 - j + r * kQ], h, acc[r]);
      }
    };
    for (; m0 + U <= terms; m0 += U, tap += U * up) apply(std::false_type());
    if (m0 < terms) apply(std::true_type());
  } else {
    auto apply = [&](auto guarded) {
#pragma unroll
      for (int j = 0; j < U; ++j) {
        if (decltype(guarded)::value && m0 + j >= terms) break;
        const T h = taps[tap + j * up];
#pragma unroll
        for (int r = 0; r < kOutputs; ++r) {
          acc[r] = fma(in[Slot<kQ>(e0 + r * q - m0 - j)], h, acc[r]);
        }
      }
    };
    for (; m0 + U <= terms; m0 += U, tap += U * up) apply(std::false_type());
    if (m0 < terms) apply(std::true_type());
  }
}

// kQ: Q where it is 1 to 3, else 0 (Q from the geometry). kPerWarp: the arrangement.
template <class T, class Taps, int kQ, bool kPerWarp>
__global__ void __launch_bounds__(kThreads)
    UpfirdnKernel(const T* __restrict__ x, T* __restrict__ y, const Geometry g,
                  const __grid_constant__ Taps taps) {
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  const auto& h = StageTable(taps, g.taps, shared_bytes);
  T* const in_buffers = reinterpret_cast<T*>(shared_bytes + g.tiles_offset);
  T* const out_buffer = in_buffers + 2 * g.in_elements;
  constexpr int U = kChunk<T>;
  const int q = kQ > 0 ? kQ : g.stride;
  const int P = g.period, S = g.tile_s;
  const std::int64_t tile_samples = static_cast<std::int64_t>(S) * q;

  auto stage = [&](int buffer, std::int64_t tile) {
    const std::int64_t row = tile / g.tiles_per_row, t = tile - row * g.tiles_per_row;
    const T* row_x = x + row * g.length;
    const std::int64_t first = t * tile_samples - (g.most_terms - 1) - U;
    T* const to = in_buffers + buffer * g.in_elements;
    for (int e = threadIdx.x; e < g.staged; e += blockDim.x) {
      const std::int64_t s = first + e;
      const bool inside = s >= 0 && s < g.length;
      CopyAsync(to + Slot<kQ>(e), inside ? row_x + s : row_x, inside);
    }
  };

  const int groups = (S + kOutputs - 1) / kOutputs;  // a multiple of 32 for kPerWarp
  const int items = P * groups;
  std::int64_t tile = blockIdx.x;
  if (tile < g.tiles) stage(0, tile);
  CopyAsyncCommit();
  for (int current = 0; tile < g.tiles; tile += gridDim.x, current ^= 1) {
    CopyAsyncWaitAll();
    // This tile's samples are visible to the block, the last tile's outputs are out, and every
    // thread is done with the buffer the next tile goes to.
    __syncthreads();
    if (tile + gridDim.x < g.tiles) stage(current ^ 1, tile + gridDim.x);
    CopyAsyncCommit();

    const T* const in = in_buffers + current * g.in_elements;
    const std::int64_t row = tile / g.tiles_per_row, t = tile - row * g.tiles_per_row;
    const std::int64_t tile_s0 = t * S;  // the tile's first s
    for (int w = threadIdx.x; w < items; w += blockDim.x) {
      int c, group;
      if constexpr (kPerWarp) {
        c = w / groups;
        group = w - c * groups;
      } else {
        group = w / P;
        c = w - group * P;
      }
      const int cd = c * g.down;
      const int p = cd % g.up, base = cd / g.up;
      const int terms = p < g.taps ? (g.taps - 1 - p) / g.up + 1 : 0;
      const int s0 = group * kOutputs;
      // Outputs r of this thread: s0 + r < S and inside the row.
      const std::int64_t remaining = g.outputs - c - (tile_s0 + s0) * P;
      const std::int64_t in_row = remaining <= 0 ? 0 : (remaining + P - 1) / P;
      const int in_tile = S - s0 < kOutputs ? S - s0 : kOutputs;
      const int count = in_row < in_tile ? static_cast<int>(in_row) : in_tile;
      if (count <= 0) continue;
      const int e0 = U + g.most_terms - 1 + base + s0 * q;
      const std::int64_t b0 = base + (tile_s0 + s0) * q;
      T acc[kOutputs];
      if (count == kOutputs && b0 >= terms - 1 &&
          b0 + static_cast<std::int64_t>(kOutputs - 1) * q <= g.length - 1) {
#pragma unroll
        for (int r = 0; r < kOutputs; ++r) acc[r] = T(0);
        InteriorOutputs<kQ>(in, e0, q, p, g.up, terms, h, acc);
      } else {
#pragma unroll
        for (int r = 0; r < kOutputs; ++r) {
          if (r < count) {
            acc[r] = ExactOutput<kQ>(in, e0 + r * q, b0 + static_cast<std::int64_t>(r) * q, p,
                                     terms, g.length, g.up, h);
          }
        }
      }
#pragma unroll
      for (int r = 0; r < kOutputs; ++r) {
        if (r < count) out_buffer[c + (s0 + r) * P] = acc[r];
      }
    }
    __syncthreads();  // the tile's outputs are in shared memory
    const std::int64_t first_output = tile_s0 * P;
    const std::int64_t left = g.outputs - first_output;
    const int tile_outputs = left < S * P ? static_cast<int>(left) : S * P;
    T* const row_y = y + row * g.outputs + first_output;
    for (int j = threadIdx.x; j < tile_outputs; j += blockDim.x) row_y[j] = out_buffer[j];
  }
}

// The direct kernel's shape, all in int64.
struct DirectGeometry {
  std::int64_t rows, length, outputs, taps, up, down;
};

// One output a thread, over a grid-stride loop: UpfirdnOutput (upfirdn_functor.h) as it is written,
// the samples read from global memory, the taps from wherever `taps` reads them (staged in shared
// memory for that placement).
template <class T, class Taps>
__global__ void __launch_bounds__(kThreads)
    UpfirdnDirectKernel(const T* __restrict__ x, T* __restrict__ y, const DirectGeometry g,
                        const __grid_constant__ Taps taps) {
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  const auto& h = StageTable(taps, static_cast<int>(g.taps), shared_bytes);
  const std::int64_t total = g.rows * g.outputs;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t w = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; w < total;
       w += stride) {
    const std::int64_t row = w / g.outputs, i = w - row * g.outputs;
    const std::int64_t t = i * g.down;
    const std::int64_t p = t % g.up, b = t / g.up;
    T acc = T(0);
    if (p < g.taps) {
      const std::int64_t last_m = (g.taps - 1 - p) / g.up;
      const std::int64_t lo = b - g.length + 1 > 0 ? b - g.length + 1 : 0;
      const std::int64_t hi = b < last_m ? b : last_m;
      std::int64_t sample = row * g.length + b - lo;  // x[b - m] of this row
      std::int64_t tap = p + lo * g.up;               // h[p + m * up]
      for (std::int64_t m = lo; m <= hi; ++m, --sample, tap += g.up) {
        acc = fma(x[sample], h[static_cast<int>(tap)], acc);
      }
    }
    y[w] = acc;
  }
}

// A tile plan: S, and whether the lanes of each warp share a phase. Sizes in int64: a plan whose
// bytes fit shared memory has sizes that fit int.
struct TilePlan {
  std::int64_t s = 0;
  bool per_warp = false;
  std::size_t bytes = 0;  // the tile buffers
  std::int64_t staged = 0, in_elements = 0;
};

template <class T>
TilePlan PlanFor(std::int64_t s, std::int64_t q, std::int64_t p_period, std::int64_t most_terms,
                 bool padded, bool per_warp) {
  constexpr std::int64_t kAlign = 16 / static_cast<std::int64_t>(sizeof(T));
  TilePlan plan;
  plan.s = s;
  plan.per_warp = per_warp;
  plan.staged = kChunk<T> + most_terms - 1 + s * q;
  const std::int64_t last = plan.staged - 1;
  plan.in_elements = ((padded ? last + (last >> 5) : last) + 1 + kAlign - 1) / kAlign * kAlign;
  const std::int64_t out_elements = (s * p_period + kAlign - 1) / kAlign * kAlign;
  plan.bytes = static_cast<std::size_t>(2 * plan.in_elements + out_elements) * sizeof(T);
  return plan;
}

// Whether the tiled kernel takes `shape` with `most_bytes` of shared memory a block for its tile
// buffers: its int arithmetic holds (c * down for c < P, tap indices up to kChunk * up past the
// last tap) and its smallest tile (S = 1: one output of each phase, Q samples and the halo) fits.
template <class T>
bool TiledFits(const UpfirdnShape& shape, std::size_t most_bytes) {
  constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
  const UpfirdnPhases phases = MakeUpfirdnPhases(shape.up, shape.down);
  if ((phases.period - 1) * shape.down + shape.up > kIntMax) return false;
  if (shape.taps + (kChunk<T> + 1) * shape.up > kIntMax) return false;
  const std::int64_t most_terms = (shape.taps + shape.up - 1) / shape.up;
  return PlanFor<T>(1, phases.stride, phases.period, most_terms, phases.stride > 3, false).bytes <=
         most_bytes;
}

// The tile for `shape`: the largest S within kTileBudgetBytes plus the halo (and within
// `most_bytes`, what the device leaves), in whole groups of 32 threads' outputs for kPhasePerWarp
// (so that every warp takes one phase) and of one thread's for kPhasePerLane; no more than a row
// needs; at least 1.
template <class T>
TilePlan ChooseTile(const UpfirdnShape& shape, bool per_warp,
                    std::size_t most_bytes = kTileBudgetBytes * 8) {
  const UpfirdnPhases phases = MakeUpfirdnPhases(shape.up, shape.down);
  const std::int64_t P = phases.period, Q = phases.stride;
  const std::int64_t most_terms = (shape.taps + shape.up - 1) / shape.up;
  const bool padded = Q > 3;
  const std::int64_t needed = std::max<std::int64_t>(1, (shape.outputs + P - 1) / P);
  auto plan = [&](std::int64_t s) { return PlanFor<T>(s, Q, P, most_terms, padded, per_warp); };
  const std::size_t halo_bytes = 2 * static_cast<std::size_t>(kChunk<T> + most_terms) * sizeof(T);
  const std::size_t budget = std::min(kTileBudgetBytes + halo_bytes, most_bytes);
  // The most S the budget holds (bytes grow with S).
  std::int64_t most = 0;
  for (std::int64_t step = 1 << 20; step > 0; step >>= 1) {
    if (plan(most + step).bytes <= budget) most += step;
  }
  const std::int64_t unit = per_warp ? 32 * kOutputs : kOutputs;
  std::int64_t s;
  if (most >= unit) {
    const std::int64_t whole = (needed + unit - 1) / unit * unit;
    s = std::min(most / unit * unit, whole);
  } else {
    s = std::max<std::int64_t>(1, std::min(most, needed));
  }
  TilePlan chosen = plan(s);
  // Whole groups of 32 threads a phase; with one phase (up dividing down) any tile is uniform.
  chosen.per_warp = per_warp && (s % unit == 0 || P == 1);
  return chosen;
}

template <class Taps>
constexpr bool kDivergentReader =
    IsSharedTableSource<Taps>::value || std::is_same<Taps, GlobalTableReader<float>>::value ||
    std::is_same<Taps, GlobalTableReader<double>>::value;

template <class T>
StrategyLimits UpfirdnLimits() {
  StrategyLimits limits;
  limits.constant_bank_bytes = upfirdn_taps_banks::Of<T>::kBytes;
  return limits;
}

// Whether the lanes of a warp share a phase for `shape` (one the tiled kernel takes) with a table
// read as `divergent_reader` says.
template <class T>
bool PhasePerWarp(const UpfirdnShape& shape, bool divergent_reader,
                  UpfirdnArrangement arrangement) {
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
  return ChooseTile<T>(shape, true).per_warp;
}

// The shared memory a table staged by `placement` takes, rounded to 16 bytes (the tile buffers
// follow it).
template <class T>
std::size_t StagedTapsBytes(std::int64_t taps, Placement placement) {
  if (placement != Placement::kSharedMemory) return 0;
  return (static_cast<std::size_t>(taps) * sizeof(T) + 15) / 16 * 16;
}

// Whether the tiled kernel takes `shape` beside `taps_bytes` of staged taps on a GPU that offers
// `device_bytes` a block (by default one with room for the taps and kTiledMostBytes).
template <class T>
bool Tiled(const UpfirdnShape& shape, std::size_t taps_bytes,
           std::size_t device_bytes = std::numeric_limits<std::size_t>::max()) {
  if (device_bytes <= taps_bytes) return false;
  return TiledFits<T>(shape, std::min(device_bytes - taps_bytes, kTiledMostBytes));
}

// The threads a block for a tile of `items` (each kOutputs outputs of one phase): the multiple of
// 32 from 64 to 256 that leaves the smallest share of thread slots idle over the tile's rounds
// (128 items: 128 threads, not 256 of which half idle; 320: 160, two full rounds).
int BlockThreads(int items) {
  int best = kThreads;
  double best_busy = 0;
  for (int threads = kThreads; threads >= 64; threads -= 32) {
    const int rounds = (items + threads - 1) / threads;
    const double busy = static_cast<double>(items) / (static_cast<double>(rounds) * threads);
    if (busy > best_busy + 1e-9) {
      best = threads;
      best_busy = busy;
    }
  }
  return best;
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
  constexpr auto kernel = UpfirdnKernel<T, Taps, kQ, kPerWarp>;
  std::size_t device_bytes = 0;
  CONSTMEM_RETURN_IF_ERROR(MaxSharedBytesPerBlock(device, &device_bytes));
  const std::size_t taps_bytes =
      (StagedTableBytes(taps, static_cast<int>(shape.taps)) + 15) / 16 * 16;
  // Tiled<T> held for these bytes: the plan's sizes and the geometry's fit int.
  const TilePlan plan =
      ChooseTile<T>(shape, kPerWarp, device_bytes > taps_bytes ? device_bytes - taps_bytes : 0);
  const UpfirdnPhases phases = MakeUpfirdnPhases(shape.up, shape.down);
  Geometry g;
  g.length = shape.length;
  g.outputs = shape.outputs;
  g.tiles_per_row = ((shape.outputs + phases.period - 1) / phases.period + plan.s - 1) / plan.s;
  g.tiles = shape.rows * g.tiles_per_row;
  g.taps = static_cast<int>(shape.taps);
  g.up = static_cast<int>(shape.up);
  g.down = static_cast<int>(shape.down);
  g.period = static_cast<int>(phases.period);
  g.stride = static_cast<int>(phases.stride);
  g.most_terms = static_cast<int>((shape.taps + shape.up - 1) / shape.up);
  g.tile_s = static_cast<int>(plan.s);
  g.staged = static_cast<int>(plan.staged);
  g.in_elements = static_cast<int>(plan.in_elements);
  g.tiles_offset = static_cast<int>(taps_bytes);
  const std::size_t shared = g.tiles_offset + plan.bytes;
  if (shared > device_bytes) {
    return Status(StatusCode::kFailedPrecondition,
                  "Upfirdn's GPU kernel needs " + std::to_string(shared) +
                      " bytes of shared memory a block for " + std::to_string(shape.taps) +
                      " taps at up " + std::to_string(shape.up) + ", down " +
                      std::to_string(shape.down) + "; this GPU offers " +
                      std::to_string(device_bytes));
  }
  const int threads = BlockThreads(g.period * ((g.tile_s + kOutputs - 1) / kOutputs));
  int resident = 0;
  CONSTMEM_RETURN_IF_ERROR(ResidentBlocksOf<kernel>(device, threads, shared, &resident));
  kernel<<<PersistentGrid(g.tiles, resident), threads, shared, stream>>>(x, y, g, taps);
  return CudaStatus(CONSTMEM_CUDA_CALL(kKernelLaunch, cudaGetLastError()), "Upfirdn launch");
}

template <class T, class Taps, bool kPerWarp>
Status LaunchForStride(int device, cudaStream_t stream, const T* x, T* y, const UpfirdnShape& shape,
                       const Taps& taps) {
  switch (MakeUpfirdnPhases(shape.up, shape.down).stride) {
    case 1:
      return LaunchPlanned<T, Taps, 1, kPerWarp>(device, stream, x, y, shape, taps);
    case 2:
      return LaunchPlanned<T, Taps, 2, kPerWarp>(device, stream, x, y, shape, taps);
    case 3:
      return LaunchPlanned<T, Taps, 3, kPerWarp>(device, stream, x, y, shape, taps);
    default:
      return LaunchPlanned<T, Taps, 0, kPerWarp>(device, stream, x, y, shape, taps);
  }
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
  if (arrangement == UpfirdnArrangement::kDirect) {
    return LaunchDirect<T>(device, stream, x, y, shape, taps);
  }
  std::size_t device_bytes = 0;
  CONSTMEM_RETURN_IF_ERROR(MaxSharedBytesPerBlock(device, &device_bytes));
  const std::size_t taps_bytes =
      (StagedTableBytes(taps, static_cast<int>(shape.taps)) + 15) / 16 * 16;
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
    if (!PhasePerWarp<T>(shape, true, arrangement)) {
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
Placement UpfirdnPlacement(std::int64_t count, SourceKind source) {
  return ChoosePlacementFor<T>(count, source, UpfirdnLimits<T>());
}

template <class T>
Placement UpfirdnPlacementForShape(const UpfirdnShape& shape, SourceKind source) {
  // An invalid shape has no tile (its phases may divide by zero): the launch refuses it.
  if (!ValidUpfirdnShape(shape)) return UpfirdnPlacement<T>(shape.taps, source);
  const bool one_phase = MakeUpfirdnPhases(shape.up, shape.down).period == 1;
  if (!Tiled<T>(shape, 0)) {
    // The direct kernel: consecutive lanes read the taps of consecutive phases, unless there is
    // one phase (up dividing down).
    if (one_phase) return UpfirdnPlacement<T>(shape.taps, source);
    return ChoosePlacementFor<T>(shape.taps, source, UpfirdnLimits<T>(), TableAccess::kDivergent);
  }
  if (ChooseTile<T>(shape, true).per_warp) {
    // One phase a warp, every lane reading the same tap. A small host table travels by value (no
    // upload); any other is staged in shared memory where it fits, which beat the constant bank
    // at every size upfirdn_bench measured on the H200 (3-22% from 31 to 255 taps, 3.4x at 4,096:
    // each tap read feeds a thread's 7 outputs, too few to keep a long table in the constant
    // cache).
    const Placement uniform = UpfirdnPlacement<T>(shape.taps, source);
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
                                    const TableView<T>& taps, Placement placement,
                                    UpfirdnArrangement arrangement, LaunchReport* report) {
  if (report != nullptr) *report = LaunchReport(placement);
  if (!ValidUpfirdnShape(shape)) return InvalidArgument("Upfirdn: invalid shape");
  if (taps.values == nullptr || taps.size != shape.taps) {
    return InvalidArgument("Upfirdn needs " + std::to_string(shape.taps) + " taps (1 to " +
                           std::to_string(kUpfirdnMaxTaps) + "); got " + std::to_string(taps.size));
  }
  if (shape.rows == 0 || shape.outputs == 0) return Status::Ok();
  return LaunchWithTable<DefaultByValueTable<T>, upfirdn_taps_banks::Of<T>,
                         upfirdn_global_taps_banks::Of<T>>(
      stream, taps, placement,
      [&](int device, const auto& reader) {
        return LaunchKernel<T>(device, stream, x, y, shape, reader, arrangement);
      },
      report);
}

template <class T>
Status LaunchUpfirdnWithPlacement(GpuStream stream, const T* x, T* y, const UpfirdnShape& shape,
                                  const TableView<T>& taps, Placement placement,
                                  LaunchReport* report) {
  return LaunchUpfirdnWithArrangement(stream, x, y, shape, taps, placement,
                                      UpfirdnArrangement::kAuto, report);
}

template <class T>
Status LaunchUpfirdn(GpuStream stream, const T* x, T* y, const UpfirdnShape& shape,
                     const TableView<T>& taps, LaunchReport* report) {
  return LaunchUpfirdnWithPlacement(stream, x, y, shape, taps,
                                    UpfirdnPlacementForShape<T>(shape, taps.source), report);
}

#define CONSTMEM_INSTANTIATE_UPFIRDN(T)                                                         \
  template Placement UpfirdnPlacement<T>(std::int64_t, SourceKind);                             \
  template Placement UpfirdnPlacementForShape<T>(const UpfirdnShape&, SourceKind);              \
  template UpfirdnArrangement UpfirdnChosenArrangement<T>(const UpfirdnShape&, Placement);      \
  template Status LaunchUpfirdn<T>(GpuStream, const T*, T*, const UpfirdnShape&,                \
                                   const TableView<T>&, LaunchReport*);                         \
  template Status LaunchUpfirdnWithPlacement<T>(GpuStream, const T*, T*, const UpfirdnShape&,   \
                                                const TableView<T>&, Placement, LaunchReport*); \
  template Status LaunchUpfirdnWithArrangement<T>(GpuStream, const T*, T*, const UpfirdnShape&, \
                                                  const TableView<T>&, Placement,               \
                                                  UpfirdnArrangement, LaunchReport*);
CONSTMEM_INSTANTIATE_UPFIRDN(float)
CONSTMEM_INSTANTIATE_UPFIRDN(double)
#undef CONSTMEM_INSTANTIATE_UPFIRDN

}  // namespace ops
}  // namespace constmem
