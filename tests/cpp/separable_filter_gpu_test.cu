// SPDX-License-Identifier: Apache-2.0
// SeparableFilter's GPU launcher, driven without a framework on a CUDA stream, bit for bit against
// the CPU kernel (itself checked against the definition and an exact reference by
// separable_filter_cpu_test): every border, both layouts (channels-last interleaved and one channel
// at a time), shared and per-image taps, odd and even kernels, kernels larger than the image,
// uint8, float16 and bfloat16 (NaN, infinities and subnormals among them: any NaN for a NaN, the
// GPU's being canonical), every placement and table source, sizes that leave tiles partial,
// misaligned data, the small tiles of GPUs with 64 KiB of shared memory a block, and a captured
// graph replayed with changed taps.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "constmem/constmem.cuh"
#include "separable_filter/separable_filter_cpu.h"
#include "separable_filter/separable_filter_functor.h"
#include "separable_filter/separable_filter_launcher.h"
#include "separable_filter_test_support.h"
#include "test_support.cuh"

namespace constmem {
namespace ops {
namespace {

using testing::DeviceBuffer;
using testing::InstantiateAsChildGraph;
using testing::Stream;
using testing::Tables;
using testing::UnderSanitizer;

constexpr std::size_t kTuringSharedBytes = 64 * 1024;
constexpr std::size_t kHopperSharedBytes = 227 * 1024;

// Every placement from every source that can take it, `offset` elements before x and y, on a GPU
// offering `shared_bytes`; bitwise against the CPU kernel, nothing written outside y.
template <class In>
void Check(const SeparableShape& s, std::uint64_t seed, int offset = 0,
           std::size_t shared_bytes = std::numeric_limits<std::size_t>::max(),
           double specials = 0) {
  using T = ComputeTypeOf<In>;
  std::mt19937_64 rng(seed);
  const std::int64_t n = s.Elements();
  const auto x = RandomImages<In>(rng, n, specials);
  const Tables<T> taps(RandomTaps<In>(rng, s));
  const auto expected = OnCpu(x, s, taps.host);
  Stream stream;
  DeviceBuffer<In> in(n + offset + 1), out(n + offset + 1);
  ASSERT_CUDA(testing::CopyToDevice(in.get() + offset, x.data(), n * sizeof(In)));
  for (SourceKind source :
       {SourceKind::kPageableHost, SourceKind::kPinnedHost, SourceKind::kDevice}) {
    for (Placement placement :
         {Placement::kByValue, Placement::kConstantBank, Placement::kGlobalMemory}) {
      const bool host = source != SourceKind::kDevice;
      if (placement == Placement::kByValue && !host) continue;  // by value needs a host table
      if (placement == Placement::kByValue && s.TableSize() * sizeof(T) > kDefaultByValueBytes)
        continue;
      // The constant bank's four slots hold 4,096 entries.
      if (placement == Placement::kConstantBank && s.TableSize() > 4096) continue;
      ASSERT_CUDA(cudaMemsetAsync(out.get(), 0x5A, (n + offset + 1) * sizeof(In), stream));
      LaunchReport report;
      ASSERT_OK((LaunchSeparableFilterWithSharedMemory<In, T>(
          stream, in.get() + offset, out.get() + offset, s, taps.View(source), placement,
          shared_bytes, &report)));
      ASSERT_CUDA(cudaStreamSynchronize(stream));
      const auto all = out.Read();
      // The first element that differs, to tell a border, a tile edge or an image's taps apart.
      std::int64_t first = 0;
      while (first < n && SameResult(all[offset + first], expected[first])) ++first;
      ASSERT_EQ(first, n) << Describe(s) << ", " << sizeof(In) << "-byte data, "
                          << PlacementName(placement) << ", offset " << offset << ", "
                          << shared_bytes << " bytes of shared memory: element " << first << " is "
                          << Printable(all[offset + first]) << ", the CPU's "
                          << Printable(expected[first]);
      const In poison = [] {
        In v;
        std::memset(&v, 0x5A, sizeof(In));
        return v;
      }();
      EXPECT_EQ(std::memcmp(&all[n + offset], &poison, sizeof(In)), 0) << "wrote past y";
      if (offset > 0) EXPECT_EQ(std::memcmp(&all[0], &poison, sizeof(In)), 0) << "wrote before y";
    }
  }
}

std::vector<SeparableShape> Shapes() {
  struct Size {
    std::int64_t b, c, h, w, kh, kw;
  };
  std::vector<Size> sizes = {
      {2, 3, 13, 17, 3, 3},       // odd kernels, partial tiles
      {2, 3, 13, 17, 4, 6},       // even kernels
      {1, 2, 37, 131, 1, 5},      // one column tap; more than a tile column
      {1, 2, 45, 7, 9, 1},        // one row tap; more than a step of rows
      {2, 1, 6, 5, 25, 40},       // kernels larger than the image
      {1, 3, 1, 33, 7, 5},        // H = 1
      {1, 3, 35, 1, 5, 7},        // W = 1
      {1, 1, 1, 1, 3, 4},         // one pixel
      {2, 3, 70, 300, 31, 17},    // several tile columns and steps
      {1, 2, 40, 260, 127, 127},  // the longest filters of the small tile
      {1, 2, 20, 40, 129, 129},   // past it along both axes: the large tile, or two passes
      {2, 1, 9, 11, 301, 131},    // far taller and wider than the image
      {1, 2, 30, 70, 5, 129},     // past it along one axis
      {1, 2, 20, 40, 513, 5},     // two passes: no tile holds 513 rows of tmp
      {1, 2, 6, 30, 1100, 3},     // per image: a table past the constant bank
      {1, 12, 19, 23, 5, 9},      // channels-last with more channels than interleave
  };
  if (UnderSanitizer()) sizes.resize(8);
  std::vector<SeparableShape> shapes;
  for (const Size& z : sizes) {
    for (auto layout : {SeparableLayout::kPlanes, SeparableLayout::kChannelsLast}) {
      for (auto border :
           {SeparableBorder::kZeros, SeparableBorder::kReflect, SeparableBorder::kReplicate}) {
        for (bool per_image : {false, true}) {
          shapes.push_back(MakeShape(z.b, z.c, z.h, z.w, z.kh, z.kw, layout, border, per_image));
        }
      }
    }
  }
  return shapes;
}

TEST(SeparableFilterGpu, EveryCaseAndPlacementBitwiseEqualToTheCpuKernel) {
  REQUIRE_GPU();
  std::uint64_t seed = 1;
  for (const SeparableShape& s : Shapes()) {
    Check<float>(s, seed++);
    Check<double>(s, seed++);
    Check<std::uint8_t>(s, seed++);
    Check<Float16>(s, seed++);
    Check<BFloat16>(s, seed++);
    if (HasFatalFailure()) return;
  }
}

// float16 and bfloat16 images with NaN, infinities, subnormals and values whose sums overflow, over
// every kernel: the register kernel (square filters of 3 to 9 taps on aligned rows of whole
// vectors, planes and RGB), the fused kernel's large and small tiles (other filters, misaligned
// rows), the two passes; every placement (Check).
TEST(SeparableFilterGpu, SixteenBitSpecialValuesOnEveryKernel) {
  REQUIRE_GPU();
  std::uint64_t seed = 5000;
  constexpr double kSpecials = 0.002;
  for (auto border :
       {SeparableBorder::kZeros, SeparableBorder::kReflect, SeparableBorder::kReplicate}) {
    const bool per_image = border == SeparableBorder::kReflect;
    std::vector<std::pair<SeparableShape, int>> cases = {
        {MakeShape(2, 3, 37, 248, 3, 3, SeparableLayout::kPlanes, border, per_image), 0},
        {MakeShape(2, 3, 37, 248, 9, 9, SeparableLayout::kPlanes, border, !per_image), 0},
        {MakeShape(2, 19, 160, 3, 5, 5, SeparableLayout::kChannelsLast, border, per_image), 0},
        {MakeShape(2, 3, 37, 250, 5, 7, SeparableLayout::kPlanes, border, per_image), 0},
        {MakeShape(2, 3, 37, 248, 5, 5, SeparableLayout::kPlanes, border, per_image), 1},
        {MakeShape(2, 3, 31, 70, 17, 9, SeparableLayout::kChannelsLast, border, !per_image), 0},
        {MakeShape(1, 2, 20, 40, 513, 5, SeparableLayout::kPlanes, border, per_image), 0},
    };
    for (const auto& [s, offset] : cases) {
      Check<Float16>(s, seed++, offset, std::numeric_limits<std::size_t>::max(), kSpecials);
      Check<BFloat16>(s, seed++, offset, std::numeric_limits<std::size_t>::max(), kSpecials);
      Check<Float16>(s, seed++, offset, kTuringSharedBytes, kSpecials);
      if (HasFatalFailure()) return;
    }
  }
}

// Several tile columns and steps in float64 with a table per image, every border and layout, 20
// times over (a race shows as a run that differs). Under the sanitizers, which the full list
// leaves this size out of, one channel, one border and one layout: racecheck takes minutes a
// launch at the full size.
TEST(SeparableFilterGpu, TileColumnsAndStepsInFloat64Repeatedly) {
  REQUIRE_GPU();
  const bool sanitized = UnderSanitizer();
  const int repeats = sanitized ? 1 : 20;
  std::uint64_t seed = 2000;
  for (int repeat = 0; repeat < repeats; ++repeat) {
    for (auto layout : {SeparableLayout::kPlanes, SeparableLayout::kChannelsLast}) {
      for (auto border :
           {SeparableBorder::kReflect, SeparableBorder::kZeros, SeparableBorder::kReplicate}) {
        Check<double>(MakeShape(2, sanitized ? 1 : 3, 70, 300, 31, 17, layout, border, true),
                      seed++);
        if (HasFatalFailure() || sanitized) return;
      }
    }
  }
}

TEST(SeparableFilterGpu, LargeImagesAndLongFilters) {
  REQUIRE_GPU();
  if (UnderSanitizer()) GTEST_SKIP() << "sizes too large for the sanitizer";
  std::uint64_t seed = 1000;
  for (std::int64_t k : {3, 17, 63, 127, 129, 301}) {
    Check<float>(
        MakeShape(2, 3, 301, 517, k, k, SeparableLayout::kPlanes, SeparableBorder::kReflect, false),
        seed++);
    Check<std::uint8_t>(
        MakeShape(2, 3, 224, 224, k, k, SeparableLayout::kPlanes, SeparableBorder::kReflect, true),
        seed++);
    Check<Float16>(
        MakeShape(2, 3, 301, 512, k, k, SeparableLayout::kPlanes, SeparableBorder::kReflect, false),
        seed++);
    Check<BFloat16>(MakeShape(2, 224, 224, 3, k, k, SeparableLayout::kChannelsLast,
                              SeparableBorder::kZeros, true),
                    seed++);
    Check<float>(MakeShape(2, 224, 224, 3, k, k, SeparableLayout::kChannelsLast,
                           SeparableBorder::kReplicate, false),
                 seed++);
  }
  // Segments of rows (few strips): an image taller than it is wide.
  Check<float>(
      MakeShape(1, 1, 3000, 100, 9, 9, SeparableLayout::kPlanes, SeparableBorder::kZeros, false),
      seed++);
  Check<double>(
      MakeShape(1, 1, 2000, 64, 63, 5, SeparableLayout::kPlanes, SeparableBorder::kReflect, false),
      seed++);
}

TEST(SeparableFilterGpu, MisalignedDataTakesTheScalarPaths) {
  REQUIRE_GPU();
  std::uint64_t seed = 2000;
  for (int offset : {1, 3}) {
    for (auto layout : {SeparableLayout::kPlanes, SeparableLayout::kChannelsLast}) {
      const auto s = MakeShape(2, 3, 33, 136, 7, 9, layout, SeparableBorder::kReflect, false);
      Check<float>(s, seed++, offset);
      Check<double>(s, seed++, offset);
      Check<std::uint8_t>(s, seed++, offset);
      Check<Float16>(s, seed++, offset);
      Check<BFloat16>(s, seed++, offset);
    }
  }
}

// Square filters of 3 to 9 taps on aligned rows of whole vectors (the register kernel): every
// size, border and placement, one strip a row and several, rows in segments, one channel and RGB
// channels-last (RGB from 7 taps and rows not of whole vectors: the fused kernel).
TEST(SeparableFilterGpu, ShortSquareFiltersBitwiseEqualToTheCpuKernel) {
  REQUIRE_GPU();
  std::uint64_t seed = 2500;
  for (std::int64_t k : {3, 5, 7, 9}) {
    for (auto border :
         {SeparableBorder::kZeros, SeparableBorder::kReflect, SeparableBorder::kReplicate}) {
      const bool per_image = border == SeparableBorder::kReflect;
      Check<float>(MakeShape(2, 3, 37, 248, k, k, SeparableLayout::kPlanes, border, per_image),
                   seed++);
      Check<std::uint8_t>(
          MakeShape(2, 3, 37, 248, k, k, SeparableLayout::kPlanes, border, !per_image), seed++);
      Check<float>(MakeShape(3, 1, 21, 16, k, k, SeparableLayout::kChannelsLast, border, false),
                   seed++);
      Check<std::uint8_t>(
          MakeShape(1, 2, 700, 40, k, k, SeparableLayout::kPlanes, border, per_image), seed++);
      // Rows of whole strips (the last ends at the row's end), RGB channels-last.
      Check<std::uint8_t>(
          MakeShape(2, 1, 45, 960, k, k, SeparableLayout::kPlanes, border, per_image), seed++);
      Check<Float16>(MakeShape(2, 3, 37, 248, k, k, SeparableLayout::kPlanes, border, per_image),
                     seed++);
      Check<BFloat16>(MakeShape(1, 2, 700, 40, k, k, SeparableLayout::kPlanes, border, !per_image),
                      seed++);
      for (std::int64_t w : {160, 224}) {
        Check<float>(MakeShape(2, 3, 19, w, k, k, SeparableLayout::kChannelsLast, border, false),
                     seed++);
        Check<Float16>(MakeShape(2, 3, 19, w, k, k, SeparableLayout::kChannelsLast, border, false),
                       seed++);
        Check<BFloat16>(
            MakeShape(2, 3, 19, w, k, k, SeparableLayout::kChannelsLast, border, per_image),
            seed++);
        Check<std::uint8_t>(
            MakeShape(2, 3, 19, w, k, k, SeparableLayout::kChannelsLast, border, per_image),
            seed++);
      }
      if (HasFatalFailure()) return;
    }
  }
}

TEST(SeparableFilterGpu, SmallTilesBitwiseEqualToTheCpuKernel) {
  REQUIRE_GPU();
  std::uint64_t seed = 3000;
  const auto shapes = Shapes();
  for (std::size_t i = 0; i < shapes.size(); i += 5) {  // a fifth of the cases, all kinds
    Check<float>(shapes[i], seed++, 0, kTuringSharedBytes);
    Check<double>(shapes[i], seed++, 0, kTuringSharedBytes);
    Check<std::uint8_t>(shapes[i], seed++, 0, kTuringSharedBytes);
    Check<Float16>(shapes[i], seed++, 0, kTuringSharedBytes);
    Check<BFloat16>(shapes[i], seed++, 0, kTuringSharedBytes);
    if (HasFatalFailure()) return;
  }
  Check<double>(
      MakeShape(1, 2, 60, 70, 127, 127, SeparableLayout::kPlanes, SeparableBorder::kReflect, true),
      seed++, 0, kTuringSharedBytes);
  Check<double>(
      MakeShape(1, 2, 60, 70, 129, 129, SeparableLayout::kPlanes, SeparableBorder::kReflect, true),
      seed++, 0, kTuringSharedBytes);
}

// At each boundary between the kernels, every border and layout: the small tile's limit and past
// it (the large tile on this GPU, two passes with 64 KiB of shared memory a block), the large
// tile's limit on this GPU and past it (two passes), and a row filter thousands of taps long. Each
// agrees with the CPU kernel bit for bit where the other leaves off.
TEST(SeparableFilterGpu, EveryKernelAtItsBoundaryAndFarPast) {
  REQUIRE_GPU();
  std::uint64_t seed = 3500;
  for (std::int64_t k : {126, 127, 128, 129}) {
    for (auto layout : {SeparableLayout::kPlanes, SeparableLayout::kChannelsLast}) {
      for (auto border :
           {SeparableBorder::kZeros, SeparableBorder::kReflect, SeparableBorder::kReplicate}) {
        for (std::size_t shared : {std::numeric_limits<std::size_t>::max(), kTuringSharedBytes}) {
          Check<float>(MakeShape(2, 3, 45, 150, k, k - 1, layout, border, false), seed++, 0,
                       shared);
          Check<std::uint8_t>(MakeShape(2, 3, 40, 64, k - 1, k, layout, border, true), seed++, 0,
                              shared);
          Check<BFloat16>(MakeShape(1, 3, 40, 64, k, k - 1, layout, border, false), seed++, 0,
                          shared);
          if (UnderSanitizer()) break;
          Check<double>(MakeShape(1, 2, 33, 300, k, k, layout, border, false), seed++, 0, shared);
        }
      }
    }
  }
  // The longest square float32 filter the large tile takes here, and the next ones.
  int device = 0;
  ASSERT_CUDA(cudaGetDevice(&device));
  int shared_optin = 0;
  ASSERT_CUDA(
      cudaDeviceGetAttribute(&shared_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  std::int64_t largest = 129;
  auto square = [](std::int64_t k, SeparableLayout layout, SeparableBorder border) {
    return MakeShape(1, 3, 40, 150, k, k, layout, border, false);
  };
  while (SeparableFilterBlockThreads<float>(
             square(largest + 1, SeparableLayout::kPlanes, SeparableBorder::kReflect),
             static_cast<std::size_t>(shared_optin)) == 256) {
    ++largest;
  }
  for (std::int64_t k : {largest - 1, largest, largest + 1, largest + 2}) {
    for (auto layout : {SeparableLayout::kPlanes, SeparableLayout::kChannelsLast}) {
      for (auto border :
           {SeparableBorder::kZeros, SeparableBorder::kReflect, SeparableBorder::kReplicate}) {
        Check<float>(square(k, layout, border), seed++);
        if (UnderSanitizer()) break;
      }
    }
  }
  if (UnderSanitizer()) return;
  Check<float>(MakeShape(1, 2, 12, 5000, 3, 4097, SeparableLayout::kPlanes,
                         SeparableBorder::kReflect, false),
               seed++);
  Check<float>(MakeShape(1, 1, 3000, 7, 2000, 1, SeparableLayout::kPlanes,
                         SeparableBorder::kReplicate, false),
               seed++);
  // Several batches of planes through the two passes' scratch (256 MiB each).
  Check<std::uint8_t>(MakeShape(12, 3, 1080, 1920, 513, 5, SeparableLayout::kPlanes,
                                SeparableBorder::kReflect, false),
                      seed++);
}

TEST(SeparableFilterLaunch, TilesShrinkWhereSharedMemoryIsSmall) {
  for (std::int64_t k : {1, 3, 31, 63, 127}) {
    const auto s =
        MakeShape(1, 3, 100, 100, k, k, SeparableLayout::kPlanes, SeparableBorder::kReflect, false);
    EXPECT_EQ(SeparableFilterBlockThreads<float>(s, kHopperSharedBytes), 256) << k;
    EXPECT_EQ(SeparableFilterBlockThreads<std::uint8_t>(s, kHopperSharedBytes), 256) << k;
    EXPECT_EQ(SeparableFilterBlockThreads<Float16>(s, kHopperSharedBytes), 256) << k;
    // Rows staged as 16-bit values: the large tile holds 63 taps in 64 KiB (62.6 KiB).
    EXPECT_EQ(SeparableFilterBlockThreads<BFloat16>(s, kTuringSharedBytes), k <= 63 ? 256 : 64)
        << k;
    EXPECT_EQ(SeparableFilterBlockThreads<double>(s, kHopperSharedBytes), k <= 63 ? 256 : 64) << k;
    EXPECT_EQ(SeparableFilterBlockThreads<float>(s, kTuringSharedBytes), k <= 31 ? 256 : 64) << k;
    EXPECT_EQ(SeparableFilterBlockThreads<double>(s, kTuringSharedBytes) > 0, true) << k;
    EXPECT_EQ(SeparableFilterBlockThreads<double>(s, 8 * 1024), 0) << k;
  }
  // Longer filters: the large tile where it fits (faster than the two passes there), never the
  // small one, else the two passes.
  for (std::int64_t k : {129, 191, 255, 20000}) {
    auto s =
        MakeShape(1, 3, 100, 100, k, 3, SeparableLayout::kPlanes, SeparableBorder::kReflect, false);
    const int large_or_two = k <= 255 ? 256 : 128;
    EXPECT_EQ(SeparableFilterBlockThreads<float>(s, kHopperSharedBytes), large_or_two) << k;
    EXPECT_EQ(SeparableFilterBlockThreads<std::uint8_t>(s, kHopperSharedBytes), large_or_two) << k;
    EXPECT_EQ(SeparableFilterBlockThreads<std::uint8_t>(s, kTuringSharedBytes), 128) << k;
    EXPECT_EQ(SeparableFilterBlockThreads<double>(s, kTuringSharedBytes), 128) << k;
    EXPECT_EQ(SeparableFilterBlockThreads<double>(s, 8 * 1024), 0) << k;
    std::swap(s.kh, s.kw);
    EXPECT_EQ(SeparableFilterBlockThreads<float>(s, kHopperSharedBytes), large_or_two) << k;
    EXPECT_EQ(SeparableFilterBlockThreads<float>(s, kTuringSharedBytes), k <= 191 ? 256 : 128) << k;
  }
}

TEST(SeparableFilterLaunch, TablesPastTheConstantBankAreReadFromGlobalMemory) {
  for (SourceKind source :
       {SourceKind::kPageableHost, SourceKind::kPinnedHost, SourceKind::kDevice}) {
    EXPECT_EQ(SeparableFilterPlacement<float>(4097, source), Placement::kGlobalMemory);
    EXPECT_EQ(SeparableFilterPlacement<double>(kSeparableMaxTableEntries, source),
              Placement::kGlobalMemory);
  }
  EXPECT_EQ(SeparableFilterPlacement<float>(4096, SourceKind::kDevice), Placement::kConstantBank);
  EXPECT_EQ(SeparableFilterPlacement<float>(258, SourceKind::kPageableHost), Placement::kByValue);
}

// The op's two tables from every pair of sources, shared and per image: joined on the host or on
// the device, the same bits as the CPU kernel over the joined table.
TEST(SeparableFilterGpu, RowAndColumnTablesFromEverySourceBitwiseEqualToTheCpuKernel) {
  REQUIRE_GPU();
  for (bool per_image : {false, true}) {
    // By value, the constant bank, two passes; per image at 700, more than the bank holds: device
    // tables read in place.
    for (std::int64_t k : {3, 40, 129, 700}) {
      const auto s = MakeShape(3, 2, 21, 37, k, k + 2, SeparableLayout::kPlanes,
                               SeparableBorder::kReflect, per_image);
      std::mt19937_64 rng(static_cast<std::uint64_t>(k) * 2 + per_image);
      const auto x = RandomImages<float>(rng, s.Elements());
      const std::vector<float> taps = RandomTaps<float>(rng, s);  // TableSize(): enough for both
      const Tables<float> row(std::vector<float>(taps.begin(), taps.begin() + s.RowTableSize()));
      const Tables<float> column(std::vector<float>(taps.begin() + s.RowTableSize(), taps.end()));
      const auto joined = JoinSeparableTaps(s, row.host.data(), column.host.data());
      const auto expected = OnCpu(x, s, joined);
      Stream stream;
      DeviceBuffer<float> in(x.size()), out(x.size());
      ASSERT_CUDA(testing::CopyToDevice(in.get(), x.data(), x.size() * sizeof(float)));
      for (SourceKind a :
           {SourceKind::kPageableHost, SourceKind::kPinnedHost, SourceKind::kDevice}) {
        for (SourceKind b : {SourceKind::kPageableHost, SourceKind::kDevice}) {
          ASSERT_CUDA(cudaMemsetAsync(out.get(), 0, x.size() * sizeof(float), stream));
          ASSERT_OK(LaunchSeparableFilter<float>(stream, in.get(), out.get(), s, row.View(a),
                                                 column.View(b)));
          ASSERT_CUDA(cudaStreamSynchronize(stream));
          EXPECT_TRUE(out.Read() == expected)
              << Describe(s) << ", row taps from " << static_cast<int>(a) << ", column taps from "
              << static_cast<int>(b);
        }
      }
      const TableView<float> short_row{row.host.data(), s.RowTableSize() - 1,
                                       SourceKind::kPageableHost};
      EXPECT_EQ(LaunchSeparableFilter<float>(stream, in.get(), out.get(), s, short_row,
                                             column.View(SourceKind::kDevice))
                    .code(),
                StatusCode::kInvalidArgument);
    }
  }
}

// Row and column taps both on the device, on each side of kSeparableSmallLaunchElements (and of
// the general kSmallLaunchElements): read in place by the small launch, both copied into one lease
// of the bank past it; the CPU kernel's bits either way.
TEST(SeparableFilterGpu, DeviceTablesOfSmallLaunchesAreReadInPlace) {
  REQUIRE_GPU();
  static_assert(kSeparableSmallLaunchElements % 2048 == 0, "rows of 2,048 reach the boundary");
  const std::int64_t boundary_rows = kSeparableSmallLaunchElements / 2048;
  for (auto [height, width] : {std::pair<std::int64_t, std::int64_t>{256, 256},
                               {256, 257},
                               {boundary_rows, 2048},
                               {boundary_rows, 2049}}) {
    const auto s = MakeShape(1, 1, height, width, 5, 7, SeparableLayout::kPlanes,
                             SeparableBorder::kReflect, false);
    const Placement expected_placement = s.Elements() <= kSeparableSmallLaunchElements
                                             ? Placement::kGlobalMemory
                                             : Placement::kConstantBank;
    std::mt19937_64 rng(static_cast<std::uint64_t>(height * width));
    const auto x = RandomImages<float>(rng, s.Elements());
    const std::vector<float> taps = RandomTaps<float>(rng, s);
    const Tables<float> row(std::vector<float>(taps.begin(), taps.begin() + s.RowTableSize()));
    const Tables<float> column(std::vector<float>(taps.begin() + s.RowTableSize(), taps.end()));
    const auto expected = OnCpu(x, s, JoinSeparableTaps(s, row.host.data(), column.host.data()));
    Stream stream;
    DeviceBuffer<float> in(x.size()), out(x.size());
    ASSERT_CUDA(testing::CopyToDevice(in.get(), x.data(), x.size() * sizeof(float)));
    LaunchReport report;
    ASSERT_OK(LaunchSeparableFilter<float>(stream, in.get(), out.get(), s,
                                           row.View(SourceKind::kDevice),
                                           column.View(SourceKind::kDevice), &report));
    ASSERT_CUDA(cudaStreamSynchronize(stream));
    EXPECT_EQ(report.placement, expected_placement) << Describe(s);
    EXPECT_TRUE(out.Read() == expected) << Describe(s);
  }
}

TEST(SeparableFilterGpu, EmptyImagesLaunchNothingAndBadTablesAreErrors) {
  REQUIRE_GPU();
  Stream stream;
  DeviceBuffer<float> buffer(64);
  std::vector<float> taps(300, 0.5f);
  for (const auto& s :
       {MakeShape(0, 3, 4, 4, 3, 3, SeparableLayout::kPlanes, SeparableBorder::kZeros, false),
        MakeShape(2, 0, 4, 4, 3, 3, SeparableLayout::kPlanes, SeparableBorder::kZeros, false),
        MakeShape(2, 3, 0, 4, 3, 3, SeparableLayout::kChannelsLast, SeparableBorder::kZeros, false),
        MakeShape(2, 3, 4, 0, 3, 3, SeparableLayout::kPlanes, SeparableBorder::kZeros, false)}) {
    const TableView<float> view{taps.data(), 6, SourceKind::kPageableHost};
    EXPECT_OK(LaunchSeparableFilter<float>(stream, buffer.get(), buffer.get(), s, view));
  }
  const auto s =
      MakeShape(1, 1, 4, 4, 3, 3, SeparableLayout::kPlanes, SeparableBorder::kZeros, false);
  const TableView<float> wrong{taps.data(), 5, SourceKind::kPageableHost};
  EXPECT_EQ(LaunchSeparableFilter<float>(stream, buffer.get(), buffer.get() + 16, s, wrong).code(),
            StatusCode::kInvalidArgument);
  auto too_long = s;
  too_long.kw = kSeparableMaxTaps + 1;
  const TableView<float> long_view{taps.data(), 300, SourceKind::kPageableHost};
  EXPECT_EQ(
      LaunchSeparableFilter<float>(stream, buffer.get(), buffer.get() + 16, too_long, long_view)
          .code(),
      StatusCode::kInvalidArgument);
  const TableView<float> view{taps.data(), 6, SourceKind::kPageableHost};
  EXPECT_OK(LaunchSeparableFilter<float>(stream, buffer.get(), buffer.get() + 16, s, view));
  ASSERT_CUDA(cudaStreamSynchronize(stream));
}

// Captured into a graph: a device table is read in place at every replay, so new taps written into
// it between replays take effect; a host table larger than the by-value parameter lives in the
// graph's buffer and changes through UpdateCapturedTable. The two passes' scratch is the graph's
// own memory.
class SeparableCapture : public ::testing::TestWithParam<std::int64_t> {};

TEST_P(SeparableCapture, CapturedGraphReplaysWithChangedTaps) {
  REQUIRE_GPU();
  std::mt19937_64 rng(4000);
  // 9 images of two k-tap filters: 1,134 taps at 63, more than a by-value table holds.
  const std::int64_t k = GetParam();
  const auto s =
      MakeShape(9, 2, 50, 70, k, k, SeparableLayout::kPlanes, SeparableBorder::kReflect, true);
  const std::int64_t n = s.Elements();
  const auto x = RandomImages<float>(rng, n);
  Stream stream;
  DeviceBuffer<float> in(n), out(n), device_taps(s.TableSize());
  ASSERT_CUDA(testing::CopyToDevice(in.get(), x.data(), n * sizeof(float)));
  for (SourceKind source : {SourceKind::kDevice, SourceKind::kPageableHost}) {
    auto taps = RandomTaps<float>(rng, s);
    ASSERT_CUDA(testing::CopyToDevice(device_taps.get(), taps.data(), taps.size() * sizeof(float)));
    const TableView<float> view{source == SourceKind::kDevice ? device_taps.get() : taps.data(),
                                s.TableSize(), source};
    cudaGraph_t graph = nullptr;
    LaunchReport report;
    ASSERT_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    const Status launched =
        LaunchSeparableFilter<float>(stream, in.get(), out.get(), s, view, &report);
    ASSERT_CUDA(cudaStreamEndCapture(stream, &graph));
    ASSERT_OK(launched);
    EXPECT_TRUE(report.captured);
    EXPECT_EQ(report.placement, Placement::kGlobalMemory);
    cudaGraphExec_t exec = nullptr;
    ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    for (int replay = 0; replay < 3; ++replay) {
      if (replay > 0) {  // new taps between replays
        taps = RandomTaps<float>(rng, s);
        if (source == SourceKind::kDevice) {
          ASSERT_CUDA(cudaMemcpyAsync(device_taps.get(), taps.data(), taps.size() * sizeof(float),
                                      cudaMemcpyHostToDevice, stream));
        } else {
          const TableView<float> update{taps.data(), s.TableSize(), SourceKind::kPageableHost};
          ASSERT_OK(UpdateCapturedTable(report.capture, update, stream));
        }
      }
      ASSERT_CUDA(cudaMemsetAsync(out.get(), 0xFF, n * sizeof(float), stream));
      ASSERT_CUDA(cudaGraphLaunch(exec, stream));
      ASSERT_CUDA(cudaStreamSynchronize(stream));
      const auto expected = OnCpu(x, s, taps);
      ASSERT_EQ(std::memcmp(out.Read().data(), expected.data(), n * sizeof(float)), 0)
          << "replay " << replay << ", " << (source == SourceKind::kDevice ? "device" : "host")
          << " taps";
    }
    ASSERT_CUDA(cudaGraphExecDestroy(exec));
    ASSERT_CUDA(cudaGraphDestroy(graph));
  }
}

// XLA's command buffers nest every captured call in a child graph node, which may hold no memory
// allocation node: row and column device tables are read in place, the two passes' scratch is a
// buffer the graph owns.
TEST_P(SeparableCapture, RowAndColumnDeviceTablesReplayInsideAChildGraphNode) {
  REQUIRE_GPU();
  std::mt19937_64 rng(4100);
  const std::int64_t k = GetParam();
  const auto s =
      MakeShape(9, 2, 50, 70, k, k + 2, SeparableLayout::kPlanes, SeparableBorder::kReflect, true);
  const std::int64_t n = s.Elements();
  const auto x = RandomImages<float>(rng, n);
  const auto taps = RandomTaps<float>(rng, s);
  const std::int64_t row_size = s.RowTableSize();
  const std::int64_t column_size = s.TableSize() - row_size;
  Stream stream;
  DeviceBuffer<float> in(n), out(n), row_taps(row_size), column_taps(column_size);
  ASSERT_CUDA(testing::CopyToDevice(in.get(), x.data(), n * sizeof(float)));
  ASSERT_CUDA(testing::CopyToDevice(row_taps.get(), taps.data(), row_size * sizeof(float)));
  ASSERT_CUDA(testing::CopyToDevice(column_taps.get(), taps.data() + row_size,
                                    column_size * sizeof(float)));
  const TableView<float> row{row_taps.get(), row_size, SourceKind::kDevice};
  const TableView<float> column{column_taps.get(), column_size, SourceKind::kDevice};
  cudaGraph_t captured = nullptr;
  LaunchReport report;
  ASSERT_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  const Status launched =
      LaunchSeparableFilter<float>(stream, in.get(), out.get(), s, row, column, &report);
  ASSERT_CUDA(cudaStreamEndCapture(stream, &captured));
  ASSERT_OK(launched);
  EXPECT_TRUE(report.captured);
  EXPECT_EQ(report.placement, Placement::kGlobalMemory);
  cudaGraph_t parent = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_CUDA(InstantiateAsChildGraph(captured, &parent, &exec));
  const auto expected = OnCpu(x, s, JoinSeparableTaps(s, taps.data(), taps.data() + row_size));
  for (int replay = 0; replay < 2; ++replay) {
    ASSERT_CUDA(cudaMemsetAsync(out.get(), 0xFF, n * sizeof(float), stream));
    ASSERT_CUDA(cudaGraphLaunch(exec, stream));
    ASSERT_CUDA(cudaStreamSynchronize(stream));
    ASSERT_EQ(std::memcmp(out.Read().data(), expected.data(), n * sizeof(float)), 0)
        << "replay " << replay;
  }
  ASSERT_CUDA(cudaGraphExecDestroy(exec));
  ASSERT_CUDA(cudaGraphDestroy(parent));
  ASSERT_CUDA(cudaGraphDestroy(captured));
}

// The fused kernel's small and large tiles here, and the two passes.
INSTANTIATE_TEST_SUITE_P(FusedAndTwoPasses, SeparableCapture, ::testing::Values(63, 129, 513));

}  // namespace
}  // namespace ops
}  // namespace constmem
