// SPDX-License-Identifier: Apache-2.0
// Upfirdn's CUDA kernels, run on the CPU by constmem/testing/emulated_gpu.hpp (copies land late,
// barriers are real, shared memory starts as NaN), bit for bit against the CPU kernel: the tiled
// kernel for Q of 1, 2, 3 and larger (its run-time Q, and residue windows compiled for Q of 4, 6
// and 12), one phase a warp and a phase a lane, taps
// read where they are or staged in shared memory (from global memory or a by-value parameter),
// tiles partial and a grid smaller than the tiles, the halo whole or walked in chunks of terms; the
// direct kernel; over the audio rate pairs and the edge cases (a row shorter than the filter, one
// sample, up = down). The tile planning is upfirdn_plan_test's; what a GPU adds (timing, the real
// cp.async, the launcher's choices) is upfirdn_gpu_test's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "constmem/by_value.cuh"
#include "narrow_test_support.h"
#include "upfirdn/upfirdn_cpu.h"
#include "upfirdn/upfirdn_direct_kernel.cuh"
#include "upfirdn/upfirdn_plan.h"
#include "upfirdn/upfirdn_tiled_kernel.cuh"

namespace constmem {
namespace ops {
namespace {

using namespace upfirdn_kernels;  // NOLINT: the kernels under test

using emulated_gpu::HostTable;

struct Case {
  std::int64_t rows, n, k, up, down;
};

std::string Describe(const Case& c) {
  return std::to_string(c.rows) + " x " + std::to_string(c.n) + ", " + std::to_string(c.k) +
         " taps, up " + std::to_string(c.up) + ", down " + std::to_string(c.down);
}

enum class Kernel { kPhasePerWarp, kPhasePerLane, kDirect };
// Where the kernel reads the taps: in place, staged from global memory, staged from a by-value
// parameter.
enum class TapsSource { kInPlace, kStaged, kStagedFromParameter };

// The shared memory a block may take on a GPU of compute capability 9.0.
constexpr std::size_t kHopperSharedBytes = 227 * 1024;

// The tiled kernel with Q = kQ (0: Q from the geometry), `blocks` blocks at most, the halo walked
// in chunks of `chunk_terms` terms where a phase has more, planned as on a GPU of compute
// capability 9.0.
template <class T, class Taps, int kQ, bool kPerWarp>
void RunTiled(const T* x, T* y, const UpfirdnShape& shape, const Taps& taps, unsigned blocks,
              std::int64_t chunk_terms) {
  const std::size_t taps_bytes = TiledTapsBytes<kPerWarp, T>(taps, shape);
  const TilePlan plan =
      ChooseTilePlan<T>(shape, kPerWarp, kHopperSharedBytes - taps_bytes, chunk_terms, taps_bytes);
  const Geometry g = MakeTiledGeometry<T>(shape, plan, taps_bytes);
  const int threads = TileThreads(g);
  const auto grid =
      static_cast<unsigned>(std::max<std::int64_t>(1, std::min<std::int64_t>(g.tiles, blocks)));
  WithTiledKernel<T, Taps, kQ, kPerWarp>(g, [&](auto kernel) {
    emulated_gpu::Launch(dim3(grid), dim3(threads), g.tiles_offset + plan.bytes,
                         decltype(kernel)::value, x, y, g, taps);
  });
}

template <class T, class Taps, bool kPerWarp>
void RunForStride(const T* x, T* y, const UpfirdnShape& shape, const Taps& taps, unsigned blocks,
                  std::int64_t chunk_terms) {
  WithCompiledStride<T, kPerWarp>(shape, [&](auto q) {
    RunTiled<T, Taps, decltype(q)::value, kPerWarp>(x, y, shape, taps, blocks, chunk_terms);
  });
}

template <class T, class Taps>
void Run(Kernel kernel, const T* x, T* y, const UpfirdnShape& shape, const Taps& taps,
         unsigned blocks, std::int64_t chunk_terms) {
  switch (kernel) {
    case Kernel::kPhasePerWarp:
      return RunForStride<T, Taps, true>(x, y, shape, taps, blocks, chunk_terms);
    case Kernel::kPhasePerLane:
      return RunForStride<T, Taps, false>(x, y, shape, taps, blocks, chunk_terms);
    case Kernel::kDirect: {
      const DirectGeometry g{shape.rows, shape.length, shape.outputs,
                             shape.taps, shape.up,     shape.down};
      const std::int64_t wanted = (shape.rows * shape.outputs + kThreads - 1) / kThreads;
      const auto grid =
          static_cast<unsigned>(std::max<std::int64_t>(1, std::min<std::int64_t>(wanted, blocks)));
      emulated_gpu::Launch(dim3(grid), dim3(kThreads),
                           StagedTableBytes(taps, static_cast<int>(shape.taps)),
                           UpfirdnDirectKernel<T, Taps>, x, y, g, taps);
      return;
    }
  }
}

// Every kernel, taps read in place and staged in shared memory, against the CPU kernel; y `offset`
// elements into its buffer, whose other elements (and 16 after y) must stay as they were. T:
// float, double, or float16 and bfloat16 (float taps), whose samples are one in 16 a special value
// (NaN, infinities, subnormals, the largest) and whose outputs are compared as NaN or bit for bit.
template <class T>
void Check(const Case& c, std::uint64_t seed, int offset = 0, unsigned blocks = 3,
           std::int64_t chunk_terms = kHaloChunkTerms) {
  using C = ComputeTypeOf<T>;
  constexpr bool kNarrow = !std::is_same<T, C>::value;
  UpfirdnShape shape;
  ASSERT_TRUE(MakeUpfirdnShape(c.rows, c.n, c.k, c.up, c.down, &shape).ok()) << Describe(c);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<T> x(static_cast<std::size_t>(c.rows * c.n));
  std::vector<C> taps(c.k);
  if constexpr (kNarrow) {
    const auto specials = NarrowSpecialValues<T>();
    for (auto& v : x) {
      v = rng() % 16 == 0 ? specials[rng() % specials.size()] : FromCompute<T>(normal(rng));
    }
  } else {
    for (auto& v : x) v = static_cast<T>(normal(rng));
  }
  for (auto& v : taps) v = static_cast<C>(normal(rng));
  const std::int64_t total = shape.rows * shape.outputs;
  std::vector<T> expected(total);
  UpfirdnCpuRange(x.data(), expected.data(), shape, taps.data(), 0, total);
  constexpr unsigned char kPattern = 0x5A;
  constexpr int kGuard = 16;  // elements after y that must stay as they were
  using Fenced = emulated_gpu::FencedArray<T>;
  // x against an inaccessible page after it, then before it: a read past either end faults.
  for (auto fence : {Fenced::Fence::kAfter, Fenced::Fence::kBefore}) {
    Fenced fenced(x.size(), fence);
    std::copy(x.begin(), x.end(), fenced.data());
    const T* const in = fenced.data();
    for (Kernel kernel : {Kernel::kPhasePerWarp, Kernel::kPhasePerLane, Kernel::kDirect}) {
      for (TapsSource source :
           {TapsSource::kInPlace, TapsSource::kStaged, TapsSource::kStagedFromParameter}) {
        if (kernel != Kernel::kDirect && !TiledFits<T>(shape, kTiledMostBytes)) continue;
        std::vector<T> y(static_cast<std::size_t>(total) + offset + kGuard);
        std::memset(y.data(), kPattern, y.size() * sizeof(T));
        if (source == TapsSource::kStaged) {
          Run(kernel, in, y.data() + offset, shape, SharedTableSource<C>{taps.data()}, blocks,
              chunk_terms);
        } else if (source == TapsSource::kStagedFromParameter) {
          using ByValue = DefaultByValueTable<C>;
          if (taps.size() > ByValue::kCapacity) continue;
          ByValueSharedSource<ByValue> staged;
          ASSERT_TRUE(FillByValueTable(taps.data(), taps.size(), &staged.table).ok());
          Run(kernel, in, y.data() + offset, shape, staged, blocks, chunk_terms);
        } else {
          Run(kernel, in, y.data() + offset, shape, HostTable<C>{taps.data()}, blocks, chunk_terms);
        }
        const char* names[] = {"a phase a warp", "a phase a lane", "direct"};
        const char* sources[] = {", taps in place", ", taps in shared memory",
                                 ", taps by value staged in shared memory"};
        bool same = std::memcmp(y.data() + offset, expected.data(), total * sizeof(T)) == 0;
        if constexpr (kNarrow) {
          same =
              FirstNarrowDifference(std::vector<T>(y.begin() + offset, y.begin() + offset + total),
                                    expected) == -1;
        }
        ASSERT_TRUE(same) << (kNarrow ? NarrowName<T>() : "") << " " << Describe(c) << ", "
                          << names[static_cast<int>(kernel)] << sources[static_cast<int>(source)]
                          << ", y offset " << offset << ", x fenced "
                          << (fence == Fenced::Fence::kAfter ? "after" : "before")
                          << ", halo chunks of " << chunk_terms << " terms";
        for (std::size_t i = 0; i < y.size(); ++i) {
          if (i == static_cast<std::size_t>(offset)) i += total;  // y itself
          if (i == y.size()) break;
          const auto* bytes = reinterpret_cast<const unsigned char*>(&y[i]);
          EXPECT_TRUE(
              std::all_of(bytes, bytes + sizeof(T), [](unsigned char b) { return b == kPattern; }))
              << Describe(c) << ": wrote outside y";
        }
      }
    }
  }
}

// The halo walked in chunks (3, 17 and 40 terms here; 2,048 on a GPU), the partial sums carried in
// the tile's output buffer: still bit for bit the CPU kernel, for every specialised Q, both dtypes,
// a last chunk partial, phases with fewer terms than a chunk's first, rows of several tiles, and
// blocks that take several tiles (one block for all of them).
TEST(UpfirdnEmulated, HaloInChunksBitwiseEqualToTheCpuKernel) {
  struct ChunkCase {
    Case shape;
    std::int64_t chunk_terms;
  };
  const ChunkCase cases[] = {
      {{2, 700, 97, 1, 3}, 17},      // Q 3, 97 terms: five chunks and a partial one
      {{3, 500, 63, 1, 2}, 40},      // Q 2
      {{2, 300, 31, 3, 1}, 3},       // Q 1, P 3: phases of 11 and 10 terms
      {{2, 3000, 145, 12, 1}, 5},    // phase blocks at P 12: 13 and 12 terms in chunks of 5
      {{1, 1000, 600, 1, 1}, 40},    // one phase, 15 chunks
      {{1, 20000, 97, 1, 1}, 17},    // rows of several tiles, each walking its chunks
      {{1, 900, 255, 160, 147}, 1},  // run-time Q, phases of 1 and 2 terms
      {{2, 600, 130, 4, 5}, 17},     // Q 5 (run-time), phases of 32 and 33 terms
      {{2, 3000, 97, 1, 4}, 17},     // residue windows at Q 4, 6 and 12: chunks not a multiple of Q
      {{1, 2000, 130, 1, 6}, 40},
      {{1, 4000, 300, 1, 12}, 40},
      {{1, 3000, 200, 1, 7}, 17},  // by residue at a run-time Q
      // 20,000 terms at Q 100: ten chunks of 2,048 beside the smallest tile, as on a GPU
      {{1, 30000, 20000, 1, 100}, kHaloChunkTerms},
  };
  std::uint64_t seed = 500;
  for (const ChunkCase& c : cases) {
    Check<float>(c.shape, seed++, /*offset=*/0, /*blocks=*/1, c.chunk_terms);
    Check<double>(c.shape, seed++, /*offset=*/1, /*blocks=*/2, c.chunk_terms);
    Check<BFloat16>(c.shape, seed++, /*offset=*/3, /*blocks=*/1, c.chunk_terms);
    if (HasFatalFailure()) return;
  }
}

TEST(UpfirdnEmulated, AudioRatesBitwiseEqualToTheCpuKernel) {
  const Case cases[] = {
      {2, 700, 31, 1, 3},
      {2, 300, 31, 3, 1},
      {1, 900, 255, 160, 147},
      {1, 900, 255, 147, 160},
      {2, 500, 31, 2, 1},
      {2, 500, 31, 1, 2},
      {1, 600, 63, 3, 2},
      {1, 800, 97, 160, 441},
      {1, 500, 33, 441, 160},
      {1, 400, 49, 5, 4},
      {1, 333, 17, 4, 5},
      {2, 3000, 158, 1, 12},
      {1, 2000, 80, 1, 6},
      {1, 8000, 54, 1, 4},
      {2, 7000, 158, 1, 12},
      {1, 30000, 97, 147, 1280},
      {1, 3000, 15521, 1280, 147},
      {1, 100000, 64, 2, 4095},      // a tile of the whole row would take 800 KiB
      {1, 3000, 145, 12, 1},         // 8 kHz -> 96 kHz
      {1, 2000, 129, 16, 1},         // upsampling by 16
      {2, 3000, 81, 8, 2},           // rates not reduced: taps 2 apart
      {1, 200, 61, 500, 3},          // fewer taps than phases: staged in their order, not by phase
      {3, 2500, 201, 2, 10},         // rates not reduced: one phase at Q 5, every other tap
      {1, 30000, 15583, 147, 1280},  // 96 kHz -> 11.025 kHz: 3 outputs a phase a tile
      {1, 60000, 80, 1, 6},          // rows of several tiles by residue: interior tiles unbounded
      {1, 100000, 158, 1, 12},
      {1, 40000, 61, 1, 7},  // the same at a run-time Q
  };
  std::uint64_t seed = 1;
  for (const Case& c : cases) {
    Check<float>(c, seed++);
    Check<double>(c, seed++, /*offset=*/1);
    Check<Float16>(c, seed++, /*offset=*/5);
    Check<BFloat16>(c, seed++);
    if (HasFatalFailure()) return;
  }
}

TEST(UpfirdnEmulated, EdgeCasesBitwiseEqualToTheCpuKernel) {
  const Case cases[] = {
      {1, 5, 31, 2, 3},      // a row shorter than the filter
      {2, 1, 4, 3, 1},       // one sample
      {1, 64, 9, 1, 1},      // up = down: a plain filter
      {3, 37, 1, 1, 1},      // one tap: a copy
      {1, 200, 4, 7, 1},     // fewer taps than phases: some phases have none
      {1, 1000, 600, 1, 1},  // many terms a phase: a halo of 599 samples
      {1, 5, 31, 1, 4},      // a row shorter than the filter at a run-time Q, by residue
      {2, 40, 61, 1, 7},     // rows of one tile: every output meets a row's end
      {3, 700, 23, 4, 1},    // phase blocks at P 4, y unaligned: a word a store
      {1, 900, 3, 8, 1},     // phase blocks with fewer taps than phases: phases of no terms
  };
  std::uint64_t seed = 100;
  for (const Case& c : cases) {
    Check<float>(c, seed++, /*offset=*/1, /*blocks=*/2);
    Check<Float16>(c, seed++, /*offset=*/1, /*blocks=*/2);
    Check<BFloat16>(c, seed++, /*offset=*/0, /*blocks=*/2);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace ops
}  // namespace constmem
