// SPDX-License-Identifier: Apache-2.0
// Interpolate's CUDA kernel, run on the CPU by constmem/testing/emulated_gpu.hpp (barriers are
// real, shared memory starts as NaN, the knots fenced), bit for bit against the CPU kernel, with
// its knots staged in part (SharedPrefixSource): points in the staged prefix, in the rest, on the
// segment that straddles the two and at the ends; prefixes that are not whole 16-byte pieces,
// knots that start off a 16-byte boundary, vectorised and scalar loops; float16 and bfloat16 data
// (eight elements a 16-byte access) over float32 knots. The launcher's choices and timing are
// ops_gpu_test's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "constmem/numeric.hpp"
#include "constmem/shared_table.cuh"
#include "interpolate/interpolate_cpu.h"
#include "interpolate/interpolate_kernel.cuh"

namespace constmem {
namespace ops {
namespace {

using interpolate_kernels::InterpolateKernel;

constexpr int kThreads = 128;
constexpr unsigned kBlocks = 3;

// Points over [lo, hi] and past both ends, every segment around the prefix's last knot, and the
// values that take the early returns.
template <class T>
std::vector<T> Points(std::mt19937_64& rng, std::int64_t count, const InterpolateGrid<T>& grid,
                      int staged) {
  const double lo = grid.lo, span = grid.last / static_cast<double>(grid.scale);
  std::uniform_real_distribution<double> point(lo - 0.1 * span, lo + 1.1 * span);
  std::vector<T> x(static_cast<std::size_t>(count));
  for (auto& v : x) v = static_cast<T>(point(rng));
  std::size_t k = 0;
  for (int knot = std::max(0, staged - 3); knot <= std::min(grid.last, staged + 2); ++knot) {
    for (double f : {0.0, 0.25, 0.5, 0.999}) {
      x[k++ % x.size()] = static_cast<T>(lo + (knot + f) * (span / grid.last));
    }
  }
  for (T special : {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                    -std::numeric_limits<T>::infinity(), static_cast<T>(lo)}) {
    x[k++ % x.size()] = special;
  }
  std::shuffle(x.begin(), x.end(), rng);
  return x;
}

template <class T, bool kVectorized>
void Run(const T* x, T* y, std::int64_t count, const InterpolateGrid<T>& grid,
         const SharedPrefixSource<T>& knots) {
  emulated_gpu::Launch(dim3(kBlocks), dim3(kThreads), StagedTableBytes(knots, grid.last + 1),
                       InterpolateKernel<T, T, SharedPrefixSource<T>, kVectorized, kThreads>, x, y,
                       count, grid, knots);
}

// `knot_count` knots in a fenced array (a read past either end throws), of which `staged` are
// staged: the kernel against the CPU kernel, vectorised and not.
template <class T>
void Check(std::int64_t knot_count, int staged, std::int64_t count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<T> table(static_cast<std::size_t>(knot_count));
  for (auto& v : table) v = static_cast<T>(normal(rng));
  InterpolateGrid<T> grid{};
  ASSERT_TRUE(MakeInterpolateGrid<T>(-1.5, 2.25, knot_count, &grid).ok());
  const auto x = Points<T>(rng, count, grid, staged);
  std::vector<T> expected(x.size());
  InterpolateCpuRange(x.data(), expected.data(), 0, count, table.data(), grid);
  using Fenced = emulated_gpu::FencedArray<T>;
  for (auto fence : {Fenced::Fence::kAfter, Fenced::Fence::kBefore}) {
    Fenced knots(table.size(), fence);
    std::copy(table.begin(), table.end(), knots.data());
    const SharedPrefixSource<T> source{knots.data(), staged};
    for (bool vectorized : {true, false}) {
      std::vector<T> y(x.size());
      std::memset(y.data(), 0x5A, y.size() * sizeof(T));
      if (vectorized) {
        Run<T, true>(x.data(), y.data(), count, grid, source);
      } else {
        Run<T, false>(x.data(), y.data(), count, grid, source);
      }
      ASSERT_EQ(std::memcmp(y.data(), expected.data(), x.size() * sizeof(T)), 0)
          << knot_count << " knots, " << staged << " staged, " << sizeof(T) << "-byte data, "
          << (vectorized ? "vectorised" : "scalar") << ", knots 16-byte aligned: "
          << (reinterpret_cast<std::uintptr_t>(knots.data()) % 16 == 0);
    }
  }
}

TEST(InterpolateEmulated, APrefixInSharedMemoryAndTheRestInGlobalMemoryBitwiseEqualToTheCpuKernel) {
  // Prefixes of whole 16-byte pieces and not; tables whose fenced-after copy starts off a 16-byte
  // boundary (5,001 and 3,003 entries), which stage entry by entry.
  struct Case {
    std::int64_t knots;
    int staged;
  };
  const Case cases[] = {{5000, 1001}, {5001, 1001}, {5000, 1024}, {3003, 3002},
                        {4096, 1},    {300, 299},   {300, 4096}};
  std::uint64_t seed = 1;
  for (const Case& c : cases) {
    Check<float>(c.knots, c.staged, 4099, seed++);
    Check<double>(c.knots, c.staged, 2051, seed++);
    if (HasFatalFailure()) return;
  }
}

TEST(InterpolateEmulated, APrefixStagesOnlyItsOwnEntries) {
  EXPECT_EQ(StagedTableBytes(SharedPrefixSource<float>{nullptr, 1001}, 5000), 1001 * sizeof(float));
  EXPECT_EQ(StagedTableBytes(SharedPrefixSource<double>{nullptr, 4096}, 300), 300 * sizeof(double));
  EXPECT_TRUE(IsSharedTableSource<SharedPrefixSource<float>>::value);
}

// float16 and bfloat16 data over float32 knots, partly staged: the kernel against the CPU kernel
// bit for bit (both convert on the host here), every 16-bit pattern among the points, vectorised
// (eight elements a vector, a scalar tail) and not.
template <class In>
void CheckNarrow(std::int64_t knot_count, int staged, std::int64_t count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<float> table(static_cast<std::size_t>(knot_count));
  for (auto& v : table) v = static_cast<float>(normal(rng));
  InterpolateGrid<float> grid{};
  ASSERT_TRUE(MakeInterpolateGrid<float>(-1.5, 2.25, knot_count, &grid).ok());
  const std::vector<float> points = Points<float>(rng, count, grid, staged);
  std::vector<In> x(points.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = i % 3 == 0 ? In{static_cast<std::uint16_t>(rng())} : FromCompute<In>(points[i]);
  }
  std::vector<In> expected(x.size());
  InterpolateCpuRange(x.data(), expected.data(), 0, count, table.data(), grid);
  emulated_gpu::FencedArray<float> knots(table.size(),
                                         emulated_gpu::FencedArray<float>::Fence::kAfter);
  std::copy(table.begin(), table.end(), knots.data());
  const SharedPrefixSource<float> source{knots.data(), staged};
  for (bool vectorized : {true, false}) {
    std::vector<In> y(x.size());
    std::memset(y.data(), 0x5A, y.size() * sizeof(In));
    const std::size_t shared = StagedTableBytes(source, grid.last + 1);
    if (vectorized) {
      emulated_gpu::Launch(dim3(kBlocks), dim3(kThreads), shared,
                           InterpolateKernel<In, float, SharedPrefixSource<float>, true, kThreads>,
                           x.data(), y.data(), count, grid, source);
    } else {
      emulated_gpu::Launch(dim3(kBlocks), dim3(kThreads), shared,
                           InterpolateKernel<In, float, SharedPrefixSource<float>, false, kThreads>,
                           x.data(), y.data(), count, grid, source);
    }
    ASSERT_EQ(std::memcmp(y.data(), expected.data(), x.size() * sizeof(In)), 0)
        << knot_count << " knots, " << staged << " staged, " << sizeof(In) << "-byte "
        << (std::is_same<In, Float16>::value ? "float16" : "bfloat16") << " data, "
        << (vectorized ? "vectorised" : "scalar");
  }
}

TEST(InterpolateEmulated, Float16AndBFloat16DataBitwiseEqualToTheCpuKernel) {
  std::uint64_t seed = 100;
  // 8,197 elements: whole vectors of eight and a tail; 3 blocks of 128 threads walk them.
  for (auto [knots, staged] : {std::pair<std::int64_t, int>{5000, 1001}, {300, 300}, {2, 2}}) {
    CheckNarrow<Float16>(knots, staged, 8197, seed++);
    CheckNarrow<BFloat16>(knots, staged, 8197, seed++);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace ops
}  // namespace constmem
