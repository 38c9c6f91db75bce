// SPDX-License-Identifier: Apache-2.0
// FirFilter's CUDA kernels, run on the CPU by constmem/testing/emulated_gpu.hpp (copies land late,
// barriers and shuffles are real, shared memory starts as NaN, inputs fenced), bit for bit against
// the CPU kernel: warp teams (up to 64 taps), block teams (up to 2,048) and the chunked kernel
// (longer), in blocks of 256 and 64 threads, SAME padding at every shift within a vector and VALID,
// rows that start on 16-byte boundaries and rows that do not, rows shorter than the filter and
// partial tiles; float16 and bfloat16 (float taps, special values among the samples, y at every
// offset within a 16-byte vector) against their CPU kernel. The sm_90 bulk copies and what a GPU
// adds (timing, the launcher's choices) are ops_gpu_test's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "fir_filter/fir_filter_block_kernels.cuh"
#include "fir_filter/fir_filter_cpu.h"
#include "fir_filter/fir_filter_plan.h"
#include "fir_filter/fir_filter_warp_kernel.cuh"
#include "narrow_test_support.h"

namespace constmem {
namespace ops {
namespace {

using namespace fir_kernels;  // NOLINT: the kernels under test
using emulated_gpu::HostTable;

enum class Team { kWarp, kBlock, kChunked };

// `kernel` in blocks of kBlock threads over a grid of at most `blocks`.
template <class T, int kShift, int kBlock>
void RunShifted(Team team, const T* x, T* y, const FirShape& shape,
                const HostTable<ComputeTypeOf<T>>& taps, unsigned blocks) {
  using C = ComputeTypeOf<T>;
  auto launch = [&](auto kernel, auto tune, std::size_t shared) {
    using Tune = decltype(tune);
    const std::int64_t tiles = shape.rows * ((shape.outputs + Tune::kTile - 1) / Tune::kTile);
    const std::int64_t wanted = (tiles + Tune::kTeamsPerBlock - 1) / Tune::kTeamsPerBlock;
    const auto grid =
        static_cast<unsigned>(std::max<std::int64_t>(1, std::min<std::int64_t>(wanted, blocks)));
    emulated_gpu::Launch(dim3(grid), dim3(kBlock), shared, kernel, x, y, shape.rows, shape.length,
                         shape.outputs, static_cast<int>(shape.taps),
                         static_cast<int>(shape.pad_left), taps);
  };
  const int tap_count = static_cast<int>(shape.taps);
  switch (team) {
    case Team::kWarp:
      launch(FirWarpTeamKernel<T, HostTable<C>, kShift, kBlock>, FirTuning<C, 32, kBlock>(),
             SharedBytes<T, 32, kBlock>(tap_count));
      break;
    case Team::kBlock:
      launch(FirBlockTeamKernel<T, HostTable<C>, kShift, kBlock>, FirTuning<C, kBlock, kBlock>(),
             SharedBytes<T, kBlock, kBlock>(tap_count));
      break;
    case Team::kChunked:
      launch(FirChunkedKernel<T, HostTable<C>, kShift, kBlock>, FirTuning<C, kBlock, kBlock>(),
             SharedBytes<T, kBlock, kBlock>(static_cast<int>(kFirTiledMaxTaps)));
      break;
  }
}

template <class T, int kBlock>
void Run(Team team, const T* x, T* y, const FirShape& shape,
         const HostTable<ComputeTypeOf<T>>& taps, unsigned blocks) {
  constexpr int L = FirTuning<ComputeTypeOf<T>>::kLanes;
  switch ((L - shape.pad_left % L) % L) {
    case 0:
      return RunShifted<T, 0, kBlock>(team, x, y, shape, taps, blocks);
    case 1:
      return RunShifted<T, 1, kBlock>(team, x, y, shape, taps, blocks);
    case 2:
      if constexpr (L > 2) return RunShifted<T, 2, kBlock>(team, x, y, shape, taps, blocks);
      break;
    case 3:
      if constexpr (L > 3) return RunShifted<T, 3, kBlock>(team, x, y, shape, taps, blocks);
      break;
  }
}

struct Case {
  std::int64_t rows, length, taps;
  FirPadding padding;
};

// The team `shape.taps` takes, in blocks of 256 and of 64 threads, against the CPU kernel; x fenced
// after and before, y `offset` elements into its buffer and its guard elements untouched. 16-bit
// data: one sample in 16 a special value, NaNs compared as NaN.
template <class T>
void Check(const Case& c, std::uint64_t seed, unsigned blocks = 3, int offset = 0) {
  using C = ComputeTypeOf<T>;
  constexpr bool kNarrow = !std::is_same<T, C>::value;
  const FirShape shape = MakeFirShape(c.rows, c.length, c.taps, c.padding);
  const Team team = c.taps <= kMaxWarpTeamTaps   ? Team::kWarp
                    : c.taps <= kFirTiledMaxTaps ? Team::kBlock
                                                 : Team::kChunked;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<T> x(static_cast<std::size_t>(c.rows * c.length));
  std::vector<C> taps(c.taps);
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
  FirFilterCpuRange(x.data(), expected.data(), shape, taps.data(), 0, total);
  constexpr unsigned char kPattern = 0x5A;
  constexpr int kGuard = 16;
  using Fenced = emulated_gpu::FencedArray<T>;
  for (auto fence : {Fenced::Fence::kAfter, Fenced::Fence::kBefore}) {
    Fenced in(x.size(), fence);
    std::copy(x.begin(), x.end(), in.data());
    for (int block : {256, 64}) {
      std::vector<T> y(static_cast<std::size_t>(total) + offset + kGuard);
      std::memset(y.data(), kPattern, y.size() * sizeof(T));
      if (block == 256) {
        Run<T, 256>(team, in.data(), y.data() + offset, shape, HostTable<C>{taps.data()}, blocks);
      } else {
        Run<T, 64>(team, in.data(), y.data() + offset, shape, HostTable<C>{taps.data()}, blocks);
      }
      bool same = std::memcmp(y.data() + offset, expected.data(), total * sizeof(T)) == 0;
      if constexpr (kNarrow) {
        same = FirstNarrowDifference(std::vector<T>(y.begin() + offset, y.begin() + offset + total),
                                     expected) == -1;
      }
      ASSERT_TRUE(same) << (kNarrow ? NarrowName<T>() : "") << " " << c.rows << " x " << c.length
                        << ", " << c.taps << " taps, "
                        << (c.padding == FirPadding::kSame ? "SAME" : "VALID") << ", " << sizeof(T)
                        << "-byte data, blocks of " << block << ", x fenced "
                        << (fence == Fenced::Fence::kAfter ? "after" : "before");
      for (std::size_t i = 0; i < y.size(); ++i) {
        if (i == static_cast<std::size_t>(offset)) i += total;  // y itself
        if (i == y.size()) break;
        const auto* bytes = reinterpret_cast<const unsigned char*>(&y[i]);
        EXPECT_TRUE(std::all_of(bytes, bytes + sizeof(T), [](unsigned char b) {
          return b == kPattern;
        })) << "wrote past y";
      }
    }
  }
}

TEST(FirFilterEmulated, WarpTeamsBitwiseEqualToTheCpuKernel) {
  const Case cases[] = {
      {2, 1000, 17, FirPadding::kSame}, {1, 777, 64, FirPadding::kSame},
      {3, 301, 4, FirPadding::kSame},   {2, 500, 31, FirPadding::kValid},
      {1, 10, 63, FirPadding::kSame},   {2, 3, 5, FirPadding::kSame},
      {1, 1025, 1, FirPadding::kValid}, {2, 64, 6, FirPadding::kSame},
  };
  std::uint64_t seed = 1;
  int offset = 0;  // y's offset for 16-bit data: every one within a 16-byte vector
  for (const Case& c : cases) {
    Check<float>(c, seed++);
    Check<double>(c, seed++);
    Check<Float16>(c, seed++, /*blocks=*/3, offset++ % 8);
    Check<BFloat16>(c, seed++, /*blocks=*/3, offset++ % 8);
    if (HasFatalFailure()) return;
  }
}

TEST(FirFilterEmulated, BlockTeamsAndChunksBitwiseEqualToTheCpuKernel) {
  const Case cases[] = {
      {1, 3000, 65, FirPadding::kSame},    {2, 1500, 255, FirPadding::kValid},
      {1, 200, 600, FirPadding::kSame},     // a row shorter than the filter
      {1, 6000, 2049, FirPadding::kSame},   // past the tiles: chunks of 2,048 taps
      {1, 5000, 4200, FirPadding::kValid},  // three chunks
  };
  std::uint64_t seed = 100;
  for (const Case& c : cases) {
    Check<float>(c, seed++, /*blocks=*/2);
    Check<BFloat16>(c, seed++, /*blocks=*/2, /*offset=*/3);
    Check<Float16>(c, seed++, /*blocks=*/2);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace ops
}  // namespace constmem
