// SPDX-License-Identifier: Apache-2.0
// SeparableFilter's CUDA kernels, run on the CPU by constmem/testing/emulated_gpu.hpp (copies land
// late, barriers are real, shared memory starts as NaN), bit for bit against the CPU kernel: the
// fused kernel in both tiles over every border and layout, interleaved channels and one channel at
// a time, shared and per-image taps in one table or two, odd and even kernels and kernels larger
// than the image, uint8, float16 and bfloat16 with aligned and misaligned rows (copied as words, or
// element by element; NaN, infinities and subnormals among the 16-bit images), a grid smaller than
// the work and rows cut into segments; the register kernel; and the two passes. What a GPU adds
// (timing, the real cp.async, the launcher's placement and choice of tile) is
// separable_filter_gpu_test's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "separable_filter/separable_filter_register_kernel.cuh"
#include "separable_filter/separable_filter_tile_kernel.cuh"
#include "separable_filter/separable_filter_two_pass_kernels.cuh"
#include "separable_filter_test_support.h"

namespace constmem {
namespace ops {
namespace {

using namespace separable_kernels;  // NOLINT: the kernels under test

using emulated_gpu::HostTable;

// Data `offset` elements into a buffer whose other elements hold a pattern, to see writes outside.
template <class In>
struct Guarded {
  static constexpr unsigned char kPattern = 0x5A;
  std::vector<In> buffer;
  int offset;
  Guarded(std::int64_t n, int offset_)
      : buffer(static_cast<std::size_t>(n + offset_ + 1)), offset(offset_) {
    std::memset(buffer.data(), kPattern, buffer.size() * sizeof(In));
  }
  In* data() { return buffer.data() + offset; }
  bool UntouchedOutside(std::int64_t n) const {
    auto untouched = [&](std::size_t i) {
      const auto* bytes = reinterpret_cast<const unsigned char*>(&buffer[i]);
      return std::all_of(bytes, bytes + sizeof(In), [](unsigned char b) { return b == kPattern; });
    };
    for (int i = 0; i < offset; ++i) {
      if (!untouched(static_cast<std::size_t>(i))) return false;
    }
    return untouched(static_cast<std::size_t>(n + offset));
  }
};

// launch(taps) with the taps as one joined table, or as a table of row taps and one of column taps.
template <class T, class Launch>
void WithHostTaps(const SeparableShape& s, const std::vector<T>& joined, bool two_tables,
                  Launch&& launch) {
  if (!two_tables) {
    launch(HostTable<T>{joined.data()});
    return;
  }
  std::vector<T> row, column;
  const std::int64_t images = s.per_image_taps ? s.images : 1;
  for (std::int64_t b = 0; b < images; ++b) {
    const T* pair = joined.data() + b * (s.kw + s.kh);
    row.insert(row.end(), pair, pair + s.kw);
    column.insert(column.end(), pair + s.kw, pair + s.kw + s.kh);
  }
  launch(RowAndColumnTaps<HostTable<T>>{{row.data()}, {column.data()}});
}

// The fused kernel in `Tile` over a grid of at most `resident` blocks.
template <class Tile, class In, class T>
void RunFused(const In* x, In* y, const SeparableShape& s, const std::vector<T>& joined,
              bool two_tables, std::int64_t resident) {
  const bool interleave =
      s.layout == SeparableLayout::kChannelsLast && s.channels <= kMaxInterleavedChannels;
  Geometry g = MakeGeometry(s, interleave, two_tables ? SeparateTaps(s) : JoinedTaps(s));
  PlanTiles<Tile>(&g, resident, x, y);
  const SharedLayout<Tile, In, T> layout(g.interleaved, g.kw, g.kh);
  const dim3 grid(static_cast<unsigned>(std::max<std::int64_t>(1, std::min(g.work, resident))));
  WithHostTaps(s, joined, two_tables, [&](const auto& taps) {
    using Taps = std::decay_t<decltype(taps)>;
    emulated_gpu::Launch(grid, dim3(Tile::kThreads), layout.Bytes(),
                         SeparableKernel<In, T, Taps, Tile>, x, y, g, taps);
  });
}

// The register kernel over a grid of at most `resident` blocks.
template <class In, class T>
void RunRegisters(const In* x, In* y, const SeparableShape& s, const std::vector<T>& joined,
                  bool two_tables, std::int64_t resident) {
  const int channels = RegisterChannels(s, x, y);
  ASSERT_GT(channels, 0) << Describe(s);
  Geometry g = MakeGeometry(s, /*interleave=*/true, two_tables ? SeparateTaps(s) : JoinedTaps(s));
  constexpr int kWarps = kRegisterThreads / 32;
  PlanRegisterStrips<In>(&g, resident * kWarps);
  const dim3 grid(static_cast<unsigned>(
      std::max<std::int64_t>(1, std::min((g.work + kWarps - 1) / kWarps, resident))));
  WithHostTaps(s, joined, two_tables, [&](const auto& taps) {
    using Taps = std::decay_t<decltype(taps)>;
    WithRegisterKernel(g.kw, channels, [&](auto k, auto c) {
      emulated_gpu::Launch(
          grid, dim3(kRegisterThreads), 0,
          SeparableRegisterKernel<In, T, Taps, decltype(k)::value, decltype(c)::value>, x, y, g,
          taps);
    });
  });
}

// The two passes, `blocks` blocks each, tmp for every plane at once.
template <class In, class T>
void RunTwoPass(const In* x, In* y, const SeparableShape& s, const std::vector<T>& joined,
                unsigned blocks) {
  const Geometry g = MakeGeometry(s, /*interleave=*/false, JoinedTaps(s));
  std::vector<T> tmp(static_cast<std::size_t>(g.planes * g.height * g.width));
  const HostTable<T> taps{joined.data()};
  emulated_gpu::Launch(dim3(blocks), dim3(kTwoPassThreads), 0,
                       SeparableRowPassKernel<In, T, HostTable<T>>, x, tmp.data(), g,
                       std::int64_t{0}, g.planes, taps);
  emulated_gpu::Launch(dim3(blocks), dim3(kTwoPassThreads), 0,
                       SeparableColumnPassKernel<In, T, HostTable<T>>, tmp.data(), y, g,
                       std::int64_t{0}, g.planes, taps);
}

enum class Kernel { kLargeTile, kSmallTile, kTwoPass, kRegisters };

// 16-bit images with this share of special values (SpecialValues).
constexpr double kSpecials = 0.002;

template <class In>
void Check(const SeparableShape& s, Kernel kernel, std::uint64_t seed, int offset = 0,
           bool two_tables = false, std::int64_t resident = 3) {
  std::mt19937_64 rng(seed);
  const std::int64_t n = s.Elements();
  const auto x = RandomImages<In>(rng, n, kSpecials);
  const auto taps = RandomTaps<In>(rng, s);
  const auto expected = OnCpu(x, s, taps);
  // The input against an inaccessible page after it, then before it: a read past either end
  // faults.
  for (auto fence : {emulated_gpu::FencedArray<In>::Fence::kAfter,
                     emulated_gpu::FencedArray<In>::Fence::kBefore}) {
    emulated_gpu::FencedArray<In> in(static_cast<std::size_t>(n), fence);
    Guarded<In> out(n, offset);
    std::copy(x.begin(), x.end(), in.data());
    switch (kernel) {
      case Kernel::kLargeTile:
        RunFused<LargeTile>(in.data(), out.data(), s, taps, two_tables, resident);
        break;
      case Kernel::kSmallTile:
        RunFused<SmallTile>(in.data(), out.data(), s, taps, two_tables, resident);
        break;
      case Kernel::kTwoPass:
        RunTwoPass(in.data(), out.data(), s, taps, static_cast<unsigned>(resident));
        break;
      case Kernel::kRegisters:
        if constexpr (sizeof(In) <= 4) {
          RunRegisters(in.data(), out.data(), s, taps, two_tables, resident);
        }
        break;
    }
    const char* names[] = {"large tile", "small tile", "two passes", "registers"};
    std::int64_t first = 0;  // the first element that differs
    while (first < n && SameResult(out.data()[first], expected[first])) ++first;
    ASSERT_EQ(first, n) << Describe(s) << ", " << sizeof(In) << "-byte data, "
                        << names[static_cast<int>(kernel)] << ", element " << first << ": "
                        << Printable(out.data()[first]) << ", the CPU's "
                        << Printable(expected[first]) << ", y offset " << offset
                        << (two_tables ? ", two tables" : ", one table") << ", " << resident
                        << " blocks resident, x fenced "
                        << (fence == emulated_gpu::FencedArray<In>::Fence::kAfter ? "after"
                                                                                  : "before");
    EXPECT_TRUE(out.UntouchedOutside(n)) << Describe(s) << ": wrote outside y";
  }
}

std::vector<SeparableShape> Shapes(SeparableLayout layout) {
  struct Size {
    std::int64_t b, c, h, w, kh, kw;
  };
  const Size sizes[] = {
      {2, 3, 13, 17, 3, 3},     // odd kernels, partial tiles
      {1, 2, 13, 17, 4, 6},     // even kernels
      {1, 2, 37, 131, 1, 5},    // one column tap; more than a tile column
      {1, 1, 45, 7, 9, 1},      // one row tap; more than a step of rows
      {2, 1, 6, 5, 25, 40},     // kernels larger than the image
      {1, 3, 1, 33, 7, 5},      // H = 1
      {1, 3, 35, 1, 5, 7},      // W = 1
      {1, 1, 70, 300, 31, 17},  // several tile columns and steps
      {1, 12, 19, 23, 5, 9},    // channels-last with more channels than interleave
      {2, 3, 11, 64, 5, 3},     // rows of whole 4-byte words: uint8 staged by copies
      {1, 4, 9, 36, 3, 9},      // the same with 4 interleaved channels
      {1, 2, 7, 160, 3, 33},    // the same over two tile columns, a long row filter
      {2, 1, 6, 8, 25, 40},     // kernels larger than a row of whole words
      {1, 3, 9, 44, 3, 4},      // even, interleaved, reflected: a fold from before the staged row
      {1, 1, 5, 64, 3, 101},    // left folds in a tile column past the first
      {1, 8, 5, 20, 3, 5},      // 8 interleaved channels in whole words
  };
  std::vector<SeparableShape> shapes;
  int i = 0;
  for (const Size& z : sizes) {
    const auto border = static_cast<SeparableBorder>(i % 3);
    shapes.push_back(MakeShape(z.b, z.c, z.h, z.w, z.kh, z.kw, layout, border, i % 2 == 1));
    ++i;
  }
  return shapes;
}

class SeparableEmulated : public ::testing::TestWithParam<SeparableLayout> {};

TEST_P(SeparableEmulated, LargeTileBitwiseEqualToTheCpuKernel) {
  std::uint64_t seed = 1;
  for (const SeparableShape& s : Shapes(GetParam())) {
    Check<float>(s, Kernel::kLargeTile, seed++);
    Check<std::uint8_t>(s, Kernel::kLargeTile, seed++);
    Check<std::uint8_t>(s, Kernel::kLargeTile, seed++, /*offset=*/1);
    Check<double>(s, Kernel::kLargeTile, seed++, /*offset=*/0, /*two_tables=*/true);
    Check<Float16>(s, Kernel::kLargeTile, seed++);
    Check<BFloat16>(s, Kernel::kLargeTile, seed++, /*offset=*/1, /*two_tables=*/true);
    if (HasFatalFailure()) return;
  }
}

TEST_P(SeparableEmulated, SmallTileBitwiseEqualToTheCpuKernel) {
  std::uint64_t seed = 100;
  for (const SeparableShape& s : Shapes(GetParam())) {
    Check<float>(s, Kernel::kSmallTile, seed++, /*offset=*/1, /*two_tables=*/true);
    Check<std::uint8_t>(s, Kernel::kSmallTile, seed++);
    Check<std::uint8_t>(s, Kernel::kSmallTile, seed++, /*offset=*/1);
    Check<Float16>(s, Kernel::kSmallTile, seed++, /*offset=*/1);
    Check<BFloat16>(s, Kernel::kSmallTile, seed++);
    if (HasFatalFailure()) return;
  }
}

TEST_P(SeparableEmulated, TwoPassesBitwiseEqualToTheCpuKernel) {
  std::uint64_t seed = 200;
  for (const SeparableShape& s : Shapes(GetParam())) {
    Check<float>(s, Kernel::kTwoPass, seed++);
    Check<std::uint8_t>(s, Kernel::kTwoPass, seed++, /*offset=*/1);
    Check<Float16>(s, Kernel::kTwoPass, seed++);
    Check<BFloat16>(s, Kernel::kTwoPass, seed++, /*offset=*/1);
    if (HasFatalFailure()) return;
  }
}

// Rows cut into segments (many blocks resident, few strips), each segment recomputing its halo.
TEST_P(SeparableEmulated, RowsInSegments) {
  const SeparableShape s =
      MakeShape(1, 1, 150, 60, 9, 5, GetParam(), SeparableBorder::kReflect, false);
  Check<float>(s, Kernel::kLargeTile, 300, 0, false, /*resident=*/64);
  Check<std::uint8_t>(s, Kernel::kSmallTile, 301, 0, false, /*resident=*/64);
  Check<float>(s, Kernel::kSmallTile, 302, 0, false, /*resident=*/64);
  Check<Float16>(s, Kernel::kLargeTile, 303, 0, false, /*resident=*/64);
  Check<BFloat16>(s, Kernel::kSmallTile, 304, 0, false, /*resident=*/64);
}

// Past the small tile's 127 taps the large tile takes filters as long as its shared memory holds
// (255 taps: 202 KiB in float32, one buffer of staged rows).
TEST_P(SeparableEmulated, LongFiltersInTheLargeTile) {
  Check<float>(MakeShape(1, 2, 40, 150, 255, 129, GetParam(), SeparableBorder::kReflect, true),
               Kernel::kLargeTile, 400);
  Check<std::uint8_t>(MakeShape(2, 1, 50, 90, 129, 255, GetParam(), SeparableBorder::kZeros, false),
                      Kernel::kLargeTile, 401, /*offset=*/1);
  Check<Float16>(MakeShape(1, 2, 40, 150, 129, 255, GetParam(), SeparableBorder::kReplicate, true),
                 Kernel::kLargeTile, 402);
}

// Square filters of 3 to 9 taps on rows of whole vectors (4 float32, 8 uint8, 4 float16 or
// bfloat16): the register kernel, over every border, several strips a row and partial ones, rows
// shorter than the filter, planes and RGB channels-last, and rows cut into segments.
TEST_P(SeparableEmulated, RegisterKernelBitwiseEqualToTheCpuKernel) {
  struct Size {
    std::int64_t b, c, h, w, k, resident;
  };
  const Size sizes[] = {
      {2, 1, 13, 16, 3, 3},     // one strip
      {1, 3, 37, 256, 5, 3},    // several strips, the last partial; RGB channels-last
      {1, 1, 45, 8, 5, 1},      // a row of one vector (uint8)
      {2, 3, 3, 24, 5, 2},      // fewer rows than taps
      {1, 3, 1, 32, 3, 1},      // H = 1
      {1, 1, 150, 488, 5, 64},  // segments of rows
      {3, 3, 20, 240, 5, 8},
      {1, 3, 9, 16, 5, 2},  // RGB: a halo of 6 elements either side
      // 3 taps: rows of whole strips (the halo lane past the row's end is lane 31), several
      // strips with the last partial, RGB
      {1, 1, 20, 960, 3, 4},
      {1, 1, 9, 1008, 3, 2},
      {1, 3, 7, 160, 3, 2},
      // 7 and 9 taps, one channel: whole strips, fewer rows than taps, segments
      {1, 1, 30, 240, 7, 3},
      {2, 1, 5, 24, 7, 2},
      {1, 1, 100, 488, 7, 64},
      {1, 1, 30, 240, 9, 3},
      {2, 1, 7, 24, 9, 2},
      {1, 1, 100, 488, 9, 64},
      // RGB at 7 and 9 taps (a halo of 9 and 12 elements, wider than a uint8 lane's 8), each over
      // every border: whole strips, fewer rows than taps, segments
      {1, 3, 30, 240, 7, 3},
      {2, 3, 5, 16, 7, 2},
      {1, 3, 60, 248, 7, 32},
      {1, 3, 30, 240, 9, 3},
      {2, 3, 7, 8, 9, 2},
      {1, 3, 60, 248, 9, 32},
  };
  std::uint64_t seed = 500;
  int i = 0;
  for (const Size& z : sizes) {
    const auto border = static_cast<SeparableBorder>(i % 3);
    const SeparableShape s =
        MakeShape(z.b, z.c, z.h, z.w, z.k, z.k, GetParam(), border, i % 2 == 1);
    Check<float>(s, Kernel::kRegisters, seed++, 0, /*two_tables=*/i % 2 == 0, z.resident);
    Check<std::uint8_t>(s, Kernel::kRegisters, seed++, 0, /*two_tables=*/i % 2 == 1, z.resident);
    Check<Float16>(s, Kernel::kRegisters, seed++, 0, /*two_tables=*/i % 2 == 0, z.resident);
    Check<BFloat16>(s, Kernel::kRegisters, seed++, 0, /*two_tables=*/i % 2 == 1, z.resident);
    if (HasFatalFailure()) return;
    ++i;
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, SeparableEmulated,
                         ::testing::Values(SeparableLayout::kPlanes,
                                           SeparableLayout::kChannelsLast));

}  // namespace
}  // namespace ops
}  // namespace constmem
