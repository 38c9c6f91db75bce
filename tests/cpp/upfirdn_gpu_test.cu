// SPDX-License-Identifier: Apache-2.0
// Upfirdn's GPU launcher, driven without a framework on a CUDA stream, against its CPU kernel
// (which upfirdn_cpu_test.cc checks against the direct reference and scipy's lengths): bit for bit,
// for every edge case, the audio rates 1/3, 3/1, 160/147, 147/160 and 2/1, 1/2, 3/2 at 31, 255 and
// 4,096 taps, every table source, placement and lane arrangement (the direct kernel included),
// aligned and misaligned data; past 4,096 taps and rates of 1,024 (up to 2^20 taps and 2^31 - 1),
// the direct kernel and the tiled one with the taps in global memory (long filters' terms in
// chunks), from host and device tables;
// special values (NaN as NaN); a launch captured into a CUDA graph and replayed with changed taps.
// float16 and bfloat16 (float taps) the same way, against their CPU kernel (the float kernel on the
// converted samples, rounded to nearest even), with special values and y at odd offsets.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "constmem/constmem.cuh"
#include "cpu_test_support.h"
#include "narrow_test_support.h"
#include "test_support.cuh"
#include "upfirdn/upfirdn_cpu.h"
#include "upfirdn/upfirdn_functor.h"
#include "upfirdn/upfirdn_launcher.h"

namespace constmem {
namespace ops {
namespace {

using testing::DeviceBuffer;
using testing::Stream;
using testing::Tables;
using testing::UnderSanitizer;

template <class T>
std::vector<T> Random(std::mt19937_64& rng, std::int64_t n) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<T> values(n);
  for (auto& v : values) v = FromCompute<T>(static_cast<ComputeTypeOf<T>>(normal(rng)));
  return values;
}

template <class T>
bool IsNan(T v) {
  if constexpr (std::is_same<T, ComputeTypeOf<T>>::value) {
    return std::isnan(v);
  } else {
    return IsNarrowNan(v);
  }
}

// A value as the failure messages show it (16-bit data as its float value and bits).
template <class T>
std::string Show(T v) {
  if constexpr (std::is_same<T, ComputeTypeOf<T>>::value) {
    return std::to_string(v);
  } else {
    return std::to_string(ToCompute<float>(v)) + " (0x" + std::to_string(v.bits) + ")";
  }
}

template <class T>
bool SameBitsOrBothNan(const std::vector<T>& a, const std::vector<T>& b, std::size_t* where) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (IsNan(a[i]) && IsNan(b[i])) continue;
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) {
      *where = i;
      return false;
    }
  }
  return true;
}

struct Case {
  std::int64_t rows, n, k, up, down;
};

std::string Describe(const Case& c) {
  return std::to_string(c.rows) + " x " + std::to_string(c.n) + ", " + std::to_string(c.k) +
         " taps, up " + std::to_string(c.up) + ", down " + std::to_string(c.down);
}

// One launch configuration: the table's source, its placement, the lanes' arrangement.
struct Config {
  SourceKind source;
  Placement placement;
  UpfirdnArrangement arrangement;
};

std::string Describe(const Config& config) {
  const char* source = config.source == SourceKind::kDevice       ? "device"
                       : config.source == SourceKind::kPinnedHost ? "pinned"
                                                                  : "pageable";
  return std::string(source) + " table, " + PlacementName(config.placement) + ", " +
         UpfirdnArrangementName(config.arrangement);
}

// Every configuration a table of `taps` entries of T can take: by value up to 4 KiB, a constant
// bank up to 4,096 taps, shared memory up to 64 KiB, global memory always; the tiled kernel's
// arrangements where its tile fits (CheckUpfirdn skips them for shapes it does not take).
template <class T>
std::vector<Config> Configs(std::int64_t taps) {
  const std::int64_t bytes = taps * static_cast<std::int64_t>(sizeof(ComputeTypeOf<T>));
  std::vector<Config> configs;
  for (SourceKind source :
       {SourceKind::kPageableHost, SourceKind::kPinnedHost, SourceKind::kDevice}) {
    const bool host = source != SourceKind::kDevice;
    for (Placement placement : {Placement::kByValue, Placement::kConstantBank,
                                Placement::kGlobalMemory, Placement::kSharedMemory}) {
      if (placement == Placement::kByValue && (!host || bytes > 4096)) continue;
      if (placement == Placement::kConstantBank && taps > 4096) continue;
      if (placement == Placement::kSharedMemory && bytes > 64 * 1024) continue;
      const bool divergent =
          placement == Placement::kGlobalMemory || placement == Placement::kSharedMemory;
      for (UpfirdnArrangement arrangement :
           {UpfirdnArrangement::kAuto, UpfirdnArrangement::kPhasePerWarp,
            UpfirdnArrangement::kPhasePerLane, UpfirdnArrangement::kDirect}) {
        if (!divergent && arrangement == UpfirdnArrangement::kPhasePerLane) continue;
        configs.push_back({source, placement, arrangement});
      }
    }
  }
  return configs;
}

// Host and device tables in global memory (and shared memory where the table fits 64 KiB), the
// arrangement chosen and the direct kernel: the configurations of a table past the constant bank.
template <class T>
std::vector<Config> LargeConfigs(std::int64_t taps) {
  std::vector<Config> configs;
  for (SourceKind source :
       {SourceKind::kPageableHost, SourceKind::kPinnedHost, SourceKind::kDevice}) {
    for (Placement placement : {Placement::kGlobalMemory, Placement::kSharedMemory}) {
      if (placement == Placement::kSharedMemory &&
          taps * static_cast<std::int64_t>(sizeof(ComputeTypeOf<T>)) > 64 * 1024) {
        continue;
      }
      for (UpfirdnArrangement arrangement :
           {UpfirdnArrangement::kAuto, UpfirdnArrangement::kDirect}) {
        configs.push_back({source, placement, arrangement});
      }
    }
  }
  return configs;
}

// The GPU against the CPU kernel for `c` in each of `configs`, x and y `offset` elements past a
// 16-byte boundary; `specials` mixes NaN, infinities, zeros and subnormals into the data (for
// 16-bit data, subnormal halves into the samples and taps that overflow 16 bits).
template <class T>
void CheckUpfirdn(const Case& c, const std::vector<Config>& configs, std::uint64_t seed,
                  int offset = 0, bool specials = false) {
  using C = ComputeTypeOf<T>;
  std::mt19937_64 rng(seed);
  UpfirdnShape shape;
  ASSERT_TRUE(MakeUpfirdnShape(c.rows, c.n, c.k, c.up, c.down, &shape).ok()) << Describe(c);
  auto x = Random<T>(rng, c.rows * c.n);
  auto taps = Random<C>(rng, c.k);
  if (specials) {
    std::vector<T> values;
    if constexpr (std::is_same<T, C>::value) {
      values = SpecialValues<T>();
    } else {
      values = NarrowSpecialValues<T>();
    }
    std::vector<C> tap_values = SpecialValues<C>();
    tap_values.push_back(C(1e5));
    for (auto& v : x) {
      if (rng() % 8 == 0) v = values[rng() % values.size()];
    }
    for (auto& v : taps) {
      if (rng() % 16 == 0) v = tap_values[rng() % tap_values.size()];
    }
  }
  const Tables<C> tables(taps);
  const std::int64_t total = shape.rows * shape.outputs;
  std::vector<T> expected(total);
  UpfirdnCpuRange(x.data(), expected.data(), shape, taps.data(), 0, total);
  Stream stream;
  DeviceBuffer<T> in(c.rows * c.n + 1 + offset), out(total + 1 + offset);
  if (!x.empty()) {
    ASSERT_CUDA(cudaMemcpyAsync(in.get() + offset, x.data(), x.size() * sizeof(T),
                                cudaMemcpyDefault, stream));
  }
  for (const Config& config : configs) {
    const bool tiled_arrangement = config.arrangement == UpfirdnArrangement::kPhasePerWarp ||
                                   config.arrangement == UpfirdnArrangement::kPhasePerLane;
    if (tiled_arrangement &&
        UpfirdnChosenArrangement<T>(shape, config.placement) == UpfirdnArrangement::kDirect) {
      continue;  // no tile of this shape fits: the tiled kernel refuses it (BadArguments test)
    }
    ASSERT_CUDA(cudaMemsetAsync(out.get(), 0xFF, (total + 1 + offset) * sizeof(T), stream));
    LaunchReport report;
    ASSERT_OK(LaunchUpfirdnWithArrangement<T>(stream, in.get() + offset, out.get() + offset, shape,
                                              tables.View(config.source), config.placement,
                                              config.arrangement, &report));
    ASSERT_CUDA(cudaStreamSynchronize(stream));
    const auto all = out.Read();
    const std::vector<T> y(all.begin() + offset, all.begin() + offset + total);
    std::size_t where = 0;
    ASSERT_TRUE(SameBitsOrBothNan(y, expected, &where))
        << Describe(c) << ", " << Describe(config) << ", " << sizeof(T) << "-byte data, offset "
        << offset << ": output " << where << " is " << Show(y[where]) << ", the CPU's "
        << Show(expected[where]);
    // The 0xFF poison is a NaN.
    EXPECT_TRUE(IsNan(all[total + offset])) << "wrote past the output";
    if (offset > 0) EXPECT_TRUE(IsNan(all[0])) << "wrote before the output";
  }
}

// The CPU test's edge cases: up = down, 1/1 (full convolution), n = 1, k > n, k < up (phases
// without taps), empty rows, the largest rates and taps.
const Case kEdgeCases[] = {
    {3, 50, 7, 1, 1},        {2, 40, 5, 3, 3},         {2, 1, 9, 1, 1},
    {2, 1, 9, 4, 3},         {3, 1, 1, 1, 1},          {1, 1, 1, 7, 2},
    {2, 10, 40, 1, 1},       {2, 10, 40, 3, 2},        {2, 30, 3, 8, 1},
    {2, 30, 3, 8, 3},        {2, 25, 2, 5, 7},         {3, 0, 9, 2, 1},
    {2, 0, 5, 1, 3},         {2, 700, 255, 160, 147},  {2, 700, 255, 147, 160},
    {1, 300, 4096, 1, 1},    {1, 300, 4096, 3, 1},     {1, 2000, 4096, 1, 3},
    {1, 50, 61, 1024, 1},    {1, 3000, 61, 1, 1024},   {1, 40, 100, 1024, 1023},
    {1, 200, 4096, 1024, 1}, {1, 9000, 4096, 1, 1024}, {1, 60, 4096, 1024, 1023},
    {40, 333, 17, 2, 1},     {20, 257, 13, 1, 2},      {17, 129, 33, 3, 5},
    {5, 1000, 8, 4, 1},      {5, 1000, 8, 1, 4},       {5, 1000, 30, 5, 4},
};

TEST(UpfirdnGpu, EdgeCasesEveryConfigurationBitwiseEqualToTheCpu) {
  REQUIRE_GPU();
  std::uint64_t seed = 1;
  for (const Case& c : kEdgeCases) {
    CheckUpfirdn<float>(c, Configs<float>(c.k), seed++);
    CheckUpfirdn<double>(c, Configs<double>(c.k), seed++);
  }
}

// The audio rates and the 2/1, 1/2, 3/2 family at 31, 255 and 4,096 taps, rows long enough for many
// tiles a row, aligned and misaligned; integer upsampling by 4 and 12 (4 phases an item) and
// downsampling by 6 and 12 (samples staged by residue).
TEST(UpfirdnGpu, RatesAndTapCountsEveryConfigurationBitwiseEqualToTheCpu) {
  REQUIRE_GPU();
  const std::int64_t rates[][2] = {{1, 3}, {3, 1}, {160, 147}, {147, 160}, {2, 1}, {1, 2},
                                   {3, 2}, {2, 3}, {4, 1},     {12, 1},    {1, 6}, {1, 12}};
  std::uint64_t seed = 100;
  for (const auto& rate : rates) {
    for (std::int64_t taps : {31, 255, 4096}) {
      const std::int64_t n = UnderSanitizer() ? 3000 : taps == 4096 ? 12000 : 40000;
      for (int offset : {0, 1}) {
        CheckUpfirdn<float>({3, n + offset, taps, rate[0], rate[1]}, Configs<float>(taps), seed++,
                            offset);
        CheckUpfirdn<double>({2, n / 2 + offset, taps, rate[0], rate[1]}, Configs<double>(taps),
                             seed++, offset);
      }
    }
  }
}

// resample_poly's default filters (20 max(up, down) + 1 taps) for 44.1 <-> 48 kHz, and many rows
// (more tiles than resident blocks: each block walks several).
TEST(UpfirdnGpu, ResamplePolyFiltersAndManyRowsBitwiseEqualToTheCpu) {
  REQUIRE_GPU();
  const std::int64_t rows = UnderSanitizer() ? 2 : 64;
  const std::int64_t n = UnderSanitizer() ? 2000 : 24000;
  std::uint64_t seed = 300;
  for (const auto& c : std::vector<Case>{{rows, n, 3201, 160, 147},
                                         {rows, n, 3201, 147, 160},
                                         {rows, n, 61, 1, 3},
                                         {rows, n, 61, 3, 1},
                                         {rows, n, 31, 2, 1},
                                         {rows, n, 255, 3, 2}}) {
    UpfirdnShape shape;
    ASSERT_TRUE(MakeUpfirdnShape(c.rows, c.n, c.k, c.up, c.down, &shape).ok());
    // What LaunchUpfirdn picks, and the two arrangements with their natural placements.
    const std::vector<Config> defaults = {
        {SourceKind::kDevice, UpfirdnPlacementForShape<float>(shape, SourceKind::kDevice),
         UpfirdnArrangement::kAuto},
        {SourceKind::kDevice, Placement::kConstantBank, UpfirdnArrangement::kPhasePerWarp},
        {SourceKind::kDevice, Placement::kSharedMemory, UpfirdnArrangement::kPhasePerLane}};
    CheckUpfirdn<float>(c, defaults, seed++);
  }
}

// Past 4,096 taps and rates of 1,024: filters of up to 2^20 taps, long filters whose terms the
// tiled kernel walks in chunks of 2,048 (12,266 taps at up 1, 30,000 at up 2, in shared and global
// memory; 20,000 at 1/100 beside the smallest tile), rates up to 2^31 - 1 (indices past int), tiles
// that do not fit shared memory (the direct kernel) and resample's longest audio filters (147 <->
// 2,560, tiled with the taps in global memory), from host and device tables.
const Case kLargeCases[] = {
    {2, 3000, 100000, 1, 1},
    {2, 20000, 12266, 1, 1},
    {1, 30000, 30000, 2, 3},
    {1, 200, kUpfirdnMaxTaps, 1000, 3},
    {2, 40, 9, kUpfirdnMaxRate, kUpfirdnMaxRate - 1},
    {2, 40, 9, kUpfirdnMaxRate - 1, kUpfirdnMaxRate},
    {2, 300, 31005, 2560, 147},
    {2, 5000, 31005, 147, 2560},
    {2, 20000, 96405, 147, 2560},
    {1, 3000, 61, 1, 1500},
    {1, 200000, 5000, 3, 70000},
    {2, 50, 20000, 65537, 3},
    {2, 4000, 16384, 7, 5},
    {3, 100000, 40, 5, 1031},
    {1, 100000, 64, 2, 4095},   // a tile of the whole row would take 800 KiB
    {1, 30000, 20000, 1, 100},  // chunks of 2,048 terms beside the smallest tile
};

TEST(UpfirdnGpu, LargeTapsAndRatesInGlobalMemoryBitwiseEqualToTheCpu) {
  REQUIRE_GPU();
  std::uint64_t seed = 700;
  for (const Case& c : kLargeCases) {
    CheckUpfirdn<float>(c, LargeConfigs<float>(c.k), seed++);
    CheckUpfirdn<double>(c, LargeConfigs<double>(c.k), seed++, 1);
  }
}

// The direct kernel in every configuration (by value and constant banks included) on the edge
// cases, which the tiled kernel runs when asked for kAuto: the same bits.
TEST(UpfirdnGpu, DirectKernelOnTheEdgeCasesBitwiseEqualToTheCpu) {
  REQUIRE_GPU();
  std::uint64_t seed = 900;
  for (const Case& c : kEdgeCases) {
    std::vector<Config> direct;
    for (const Config& config : Configs<float>(c.k)) {
      if (config.arrangement == UpfirdnArrangement::kDirect) direct.push_back(config);
    }
    CheckUpfirdn<float>(c, direct, seed++, 0, true);
  }
}

// LaunchUpfirdn's own placement for `c`, with the taps from the host and from the device: the
// placement UpfirdnPlacementForShape names, passed to `check` (source, placement), and the CPU
// kernel's bits.
template <class Check>
void CheckChosenPlacement(const Case& c, std::mt19937_64& rng, cudaStream_t stream,
                          const Check& check) {
  UpfirdnShape shape;
  ASSERT_TRUE(MakeUpfirdnShape(c.rows, c.n, c.k, c.up, c.down, &shape).ok());
  const auto x = Random<float>(rng, c.rows * c.n);
  const auto taps = Random<float>(rng, c.k);
  std::vector<float> expected(shape.rows * shape.outputs);
  UpfirdnCpuRange(x.data(), expected.data(), shape, taps.data(), 0, shape.rows * shape.outputs);
  DeviceBuffer<float> in(x.size()), out(expected.size()), device_taps(c.k);
  ASSERT_CUDA(testing::CopyToDevice(in.get(), x.data(), x.size() * sizeof(float)));
  ASSERT_CUDA(testing::CopyToDevice(device_taps.get(), taps.data(), c.k * sizeof(float)));
  for (const TableView<float>& view :
       {TableView<float>{taps.data(), c.k, SourceKind::kPageableHost},
        TableView<float>{device_taps.get(), c.k, SourceKind::kDevice}}) {
    LaunchReport report;
    ASSERT_CUDA(cudaMemsetAsync(out.get(), 0xFF, expected.size() * sizeof(float), stream));
    ASSERT_OK(LaunchUpfirdn<float>(stream, in.get(), out.get(), shape, view, &report));
    ASSERT_CUDA(cudaStreamSynchronize(stream));
    EXPECT_EQ(report.placement, UpfirdnPlacementForShape<float>(shape, view.source));
    check(view.source, report.placement);
    std::size_t where = 0;
    ASSERT_TRUE(SameBitsOrBothNan(out.Read(), expected, &where))
        << Describe(c) << ", " << PlacementName(report.placement) << ": output " << where;
  }
}

// Launches of at most kSmallLaunchElements outputs whose larger twins take each arrangement: one
// phase a warp (3/2, 2/1, 1/3), a phase a lane (160/147) and the direct kernel (rates past any
// tile).
const Case kSmallLaunchCases[] = {
    {1, 1000, 61, 3, 2},  {2, 1000, 31, 2, 1},    {1, 1000, 61, 1, 3},
    {1, 30000, 61, 3, 2}, {1, 400, 61, 160, 147}, {2, 40, 9, kUpfirdnMaxRate, kUpfirdnMaxRate - 1}};

// A small launch takes a small host table by value in every arrangement and reads a device table
// in place; a larger launch stages a host table read at divergent indices.
TEST(UpfirdnGpu, SmallLaunchesTakeSmallHostTablesByValue) {
  REQUIRE_GPU();
  std::mt19937_64 rng(23);
  Stream stream;
  for (const Case& c : kSmallLaunchCases) {
    CheckChosenPlacement(c, rng, stream, [&](SourceKind source, Placement placement) {
      if (source != SourceKind::kDevice) EXPECT_EQ(placement, Placement::kByValue) << Describe(c);
      EXPECT_NE(placement, Placement::kConstantBank) << Describe(c);
    });
  }
  CheckChosenPlacement({1, 70000, 61, 160, 147}, rng, stream, [&](SourceKind, Placement placement) {
    EXPECT_EQ(placement, Placement::kSharedMemory);
  });
}

// What LaunchUpfirdn picks for tables past the constant bank: global memory (shared memory for a
// direct kernel whose lanes read taps of different phases, where the table fits 64 KiB).
TEST(UpfirdnGpu, LargeTablesGoToGlobalMemory) {
  REQUIRE_GPU();
  std::mt19937_64 rng(17);
  Stream stream;
  for (const Case& c : std::vector<Case>{{1, 3000, 100000, 1, 1},
                                         {1, 300, 31005, 2560, 147},
                                         {1, 4000, 31005, 147, 2560},
                                         {1, 40, 5000, kUpfirdnMaxRate, kUpfirdnMaxRate - 2}}) {
    CheckChosenPlacement(c, rng, stream, [&](SourceKind, Placement placement) {
      EXPECT_EQ(placement, c.k * 4 <= 64 * 1024 && c.up > 1 ? Placement::kSharedMemory
                                                            : Placement::kGlobalMemory)
          << Describe(c);
    });
  }
}

TEST(UpfirdnGpu, SpecialValuesGiveTheCpusBitsAndNanForNan) {
  REQUIRE_GPU();
  std::uint64_t seed = 500;
  for (const Case& c : std::vector<Case>{{3, 3000, 7, 1, 1},
                                         {3, 3000, 7, 3, 2},
                                         {2, 4000, 31, 2, 1},
                                         {2, 4000, 31, 1, 3},
                                         {2, 3000, 255, 160, 147}}) {
    CheckUpfirdn<float>(c, Configs<float>(c.k), seed++, 0, true);
    CheckUpfirdn<double>(c, Configs<double>(c.k), seed++, 0, true);
  }
}

// float16 and bfloat16: every configuration of the edge cases, the rates and tap counts (y at 0, 1
// and 5 elements past a 16-byte boundary), the long filters and large rates, and special values.
template <class H>
void CheckNarrowUpfirdn(std::uint64_t seed) {
  int offset = 0;
  for (const Case& c : kEdgeCases) {
    CheckUpfirdn<H>(c, Configs<H>(c.k), seed++, offset, offset == 2);
    offset = (offset + 1) % 3;
    if (::testing::Test::HasFatalFailure()) return;
  }
  const std::int64_t rates[][2] = {{1, 3}, {3, 1}, {160, 147}, {147, 160}, {2, 1},
                                   {1, 2}, {3, 2}, {2, 3},     {4, 1},     {12, 1},
                                   {1, 4}, {1, 6}, {1, 12},    {1, 7},     {5, 12}};
  for (const auto& rate : rates) {
    for (std::int64_t taps : {31, 255, 4096}) {
      const std::int64_t n = UnderSanitizer() ? 3000 : taps == 4096 ? 12000 : 40000;
      for (int offset : {0, 1, 5}) {
        CheckUpfirdn<H>({3, n + offset, taps, rate[0], rate[1]}, Configs<H>(taps), seed++, offset,
                        offset == 5);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
  for (const Case& c : kLargeCases) {
    CheckUpfirdn<H>(c, LargeConfigs<H>(c.k), seed++, 3);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(UpfirdnGpu, Float16EveryConfigurationBitwiseEqualToTheCpu) {
  REQUIRE_GPU();
  CheckNarrowUpfirdn<Float16>(1100);
}

TEST(UpfirdnGpu, BFloat16EveryConfigurationBitwiseEqualToTheCpu) {
  REQUIRE_GPU();
  CheckNarrowUpfirdn<BFloat16>(1500);
}

// Host logic alone: it runs without a GPU too.
TEST(UpfirdnLaunch, LaunchUpfirdnPicksThePlacementForTheRates) {
  auto shape = [](std::int64_t taps, std::int64_t up, std::int64_t down) {
    UpfirdnShape s;
    EXPECT_TRUE(MakeUpfirdnShape(64, 480000, taps, up, down, &s).ok());
    return s;
  };
  // Small P + Q: one phase a warp, a small host table by value, any other staged in shared
  // memory (faster than the constant bank at every size measured).
  EXPECT_EQ(UpfirdnPlacementForShape<float>(shape(61, 3, 1), SourceKind::kPageableHost),
            Placement::kByValue);
  EXPECT_EQ(UpfirdnPlacementForShape<float>(shape(61, 1, 3), SourceKind::kDevice),
            Placement::kSharedMemory);
  EXPECT_EQ(UpfirdnPlacementForShape<double>(shape(255, 3, 2), SourceKind::kDevice),
            Placement::kSharedMemory);
  EXPECT_EQ(UpfirdnPlacementForShape<float>(shape(2048, 1, 1), SourceKind::kPageableHost),
            Placement::kSharedMemory);
  EXPECT_EQ(UpfirdnChosenArrangement<float>(shape(61, 3, 1), Placement::kConstantBank),
            UpfirdnArrangement::kPhasePerWarp);
  EXPECT_EQ(UpfirdnChosenArrangement<float>(shape(61, 3, 1), Placement::kSharedMemory),
            UpfirdnArrangement::kPhasePerWarp);
  // 8 -> 96 kHz: one phase a warp, a host table by value.
  EXPECT_EQ(UpfirdnPlacementForShape<float>(shape(145, 12, 1), SourceKind::kPageableHost),
            Placement::kByValue);
  EXPECT_EQ(UpfirdnChosenArrangement<float>(shape(145, 12, 1), Placement::kByValue),
            UpfirdnArrangement::kPhasePerWarp);
  // 44.1 <-> 48 kHz: phases change from lane to lane, the taps in shared memory.
  for (auto s : {shape(3201, 160, 147), shape(3201, 147, 160)}) {
    EXPECT_EQ(UpfirdnPlacementForShape<float>(s, SourceKind::kDevice), Placement::kSharedMemory);
    EXPECT_EQ(UpfirdnPlacementForShape<float>(s, SourceKind::kPageableHost),
              Placement::kSharedMemory);
    EXPECT_EQ(UpfirdnChosenArrangement<float>(s, Placement::kSharedMemory),
              UpfirdnArrangement::kPhasePerLane);
    EXPECT_EQ(UpfirdnChosenArrangement<float>(s, Placement::kConstantBank),
              UpfirdnArrangement::kPhasePerWarp);
  }
  // A launch of at most kSmallLaunchElements outputs: a small host table by value, in each
  // arrangement a larger launch would take (one phase a warp, a phase a lane, the direct kernel).
  for (const Case& c : kSmallLaunchCases) {
    UpfirdnShape small;
    ASSERT_TRUE(MakeUpfirdnShape(c.rows, c.n, c.k, c.up, c.down, &small).ok());
    EXPECT_EQ(UpfirdnPlacementForShape<float>(small, SourceKind::kPageableHost),
              Placement::kByValue)
        << Describe(c);
    EXPECT_NE(UpfirdnPlacementForShape<float>(small, SourceKind::kDevice), Placement::kConstantBank)
        << Describe(c);
  }
  UpfirdnShape per_lane, direct, large;
  ASSERT_TRUE(MakeUpfirdnShape(1, 400, 61, 160, 147, &per_lane).ok());
  ASSERT_TRUE(MakeUpfirdnShape(1, 40, 9, kUpfirdnMaxRate, kUpfirdnMaxRate - 1, &direct).ok());
  ASSERT_TRUE(MakeUpfirdnShape(1, 70000, 61, 160, 147, &large).ok());
  EXPECT_EQ(UpfirdnChosenArrangement<float>(per_lane, Placement::kSharedMemory),
            UpfirdnArrangement::kPhasePerLane);
  EXPECT_EQ(UpfirdnChosenArrangement<float>(direct, Placement::kGlobalMemory),
            UpfirdnArrangement::kDirect);
  // Past it, a host table read at divergent indices is staged: from its parameter up to 4 KiB,
  // else uploaded first.
  EXPECT_EQ(UpfirdnPlacementForShape<float>(large, SourceKind::kPageableHost),
            Placement::kSharedMemory);
  // One phase (up divides down): uniform whatever the tile.
  EXPECT_EQ(UpfirdnPlacementForShape<float>(shape(4096, 1, 1024), SourceKind::kDevice),
            Placement::kSharedMemory);
  EXPECT_EQ(UpfirdnChosenArrangement<double>(shape(4096, 1, 1024), Placement::kSharedMemory),
            UpfirdnArrangement::kPhasePerWarp);
  EXPECT_EQ(UpfirdnPlacement<float>(1024, SourceKind::kPageableHost), Placement::kByValue);
  EXPECT_EQ(UpfirdnPlacement<float>(4096, SourceKind::kPageableHost), Placement::kConstantBank);
  EXPECT_EQ(UpfirdnPlacement<double>(4096, SourceKind::kDevice), Placement::kConstantBank);
  // Past the constant bank: global memory, from any source.
  for (SourceKind source : {SourceKind::kPageableHost, SourceKind::kDevice}) {
    EXPECT_EQ(UpfirdnPlacement<float>(4097, source), Placement::kGlobalMemory);
    EXPECT_EQ(UpfirdnPlacement<double>(4097, source), Placement::kGlobalMemory);
    EXPECT_EQ(UpfirdnPlacement<float>(kUpfirdnMaxTaps, source), Placement::kGlobalMemory);
    // A long filter at up 1: tiled, its terms in chunks, the taps in global memory.
    EXPECT_EQ(UpfirdnPlacementForShape<float>(shape(100000, 1, 1), source),
              Placement::kGlobalMemory);
    EXPECT_EQ(UpfirdnPlacementForShape<double>(shape(kUpfirdnMaxTaps, 3, 2), source),
              Placement::kGlobalMemory);
    // resample's 147 <-> 2,560 filters: tiled, phase per lane, 124 KiB of taps in global memory.
    EXPECT_EQ(UpfirdnPlacementForShape<float>(shape(31005, 2560, 147), source),
              Placement::kGlobalMemory);
    EXPECT_EQ(UpfirdnPlacementForShape<float>(shape(31005, 147, 2560), source),
              Placement::kGlobalMemory);
    // The direct kernel, lanes of different phases: small device tables in global memory, small
    // host ones staged from their by-value parameter, up to 64 KiB in shared memory.
    EXPECT_EQ(
        UpfirdnPlacementForShape<float>(shape(9, kUpfirdnMaxRate, kUpfirdnMaxRate - 1), source),
        source == SourceKind::kDevice ? Placement::kGlobalMemory : Placement::kSharedMemory);
    EXPECT_EQ(UpfirdnPlacementForShape<float>(shape(4000, 65537, 3), source),
              Placement::kSharedMemory);
    EXPECT_EQ(UpfirdnPlacementForShape<float>(shape(20000, 65537, 3), source),
              Placement::kGlobalMemory);
  }
  EXPECT_EQ(UpfirdnChosenArrangement<float>(shape(100000, 1, 1), Placement::kGlobalMemory),
            UpfirdnArrangement::kPhasePerWarp);
  EXPECT_NE(
      UpfirdnChosenArrangement<double>(shape(kUpfirdnMaxTaps, 3, 2), Placement::kGlobalMemory),
      UpfirdnArrangement::kDirect);
  EXPECT_EQ(UpfirdnChosenArrangement<float>(shape(9, kUpfirdnMaxRate, kUpfirdnMaxRate - 1),
                                            Placement::kGlobalMemory),
            UpfirdnArrangement::kDirect);
  EXPECT_EQ(UpfirdnChosenArrangement<float>(shape(4000, 65537, 3), Placement::kSharedMemory),
            UpfirdnArrangement::kDirect);
  EXPECT_EQ(UpfirdnChosenArrangement<float>(shape(31005, 2560, 147), Placement::kGlobalMemory),
            UpfirdnArrangement::kPhasePerLane);
  EXPECT_EQ(UpfirdnChosenArrangement<float>(shape(31005, 147, 2560), Placement::kGlobalMemory),
            UpfirdnArrangement::kPhasePerLane);
  // Every shape of rates up to 1,024 and 4,096 taps stays tiled, its taps staged or not.
  for (Placement placement : {Placement::kConstantBank, Placement::kSharedMemory}) {
    EXPECT_NE(UpfirdnChosenArrangement<double>(shape(4096, 1, 1024), placement),
              UpfirdnArrangement::kDirect);
    EXPECT_NE(UpfirdnChosenArrangement<double>(shape(4096, 2, 1023), placement),
              UpfirdnArrangement::kDirect);
    EXPECT_NE(UpfirdnChosenArrangement<double>(shape(4096, 1024, 1023), placement),
              UpfirdnArrangement::kDirect);
  }
}

TEST(UpfirdnGpu, BadArgumentsAreErrorsAndTheNextCallWorks) {
  REQUIRE_GPU();
  Stream stream;
  DeviceBuffer<float> x(64), y(256);
  ASSERT_CUDA(cudaMemsetAsync(x.get(), 0, 64 * sizeof(float), stream));
  UpfirdnShape shape;
  ASSERT_TRUE(MakeUpfirdnShape(1, 64, 5, 3, 2, &shape).ok());
  const std::vector<float> five(5, 0.5f), four(4, 0.5f);
  const TableView<float> good{five.data(), 5, SourceKind::kPageableHost};
  const TableView<float> short_table{four.data(), 4, SourceKind::kPageableHost};
  EXPECT_EQ(LaunchUpfirdn<float>(stream, x.get(), y.get(), shape, short_table).code(),
            StatusCode::kInvalidArgument);
  UpfirdnShape bad = shape;
  bad.outputs += 1;
  EXPECT_EQ(LaunchUpfirdn<float>(stream, x.get(), y.get(), bad, good).code(),
            StatusCode::kInvalidArgument);
  bad = shape;
  bad.up = 0;
  EXPECT_EQ(LaunchUpfirdn<float>(stream, x.get(), y.get(), bad, good).code(),
            StatusCode::kInvalidArgument);
  // Lanes of different phases cannot read a by-value table or a constant bank.
  EXPECT_EQ(
      LaunchUpfirdnWithArrangement<float>(stream, x.get(), y.get(), shape, good,
                                          Placement::kByValue, UpfirdnArrangement::kPhasePerLane)
          .code(),
      StatusCode::kInvalidArgument);
  // The tiled kernel asked for a shape whose tile fits no GPU (P = 30,011 outputs and Q = 30,013
  // samples a tile: 360 KiB).
  UpfirdnShape wide_rates;
  ASSERT_TRUE(MakeUpfirdnShape(1, 64, 9, 30011, 30013, &wide_rates).ok());
  DeviceBuffer<float> wide_taps(9), wide_y(wide_rates.outputs);
  for (UpfirdnArrangement arrangement :
       {UpfirdnArrangement::kPhasePerWarp, UpfirdnArrangement::kPhasePerLane}) {
    EXPECT_EQ(LaunchUpfirdnWithArrangement<float>(
                  stream, x.get(), wide_y.get(), wide_rates,
                  TableView<float>{wide_taps.get(), 9, SourceKind::kDevice},
                  Placement::kGlobalMemory, arrangement)
                  .code(),
              StatusCode::kFailedPrecondition);
  }
  ASSERT_CUDA(cudaMemsetAsync(y.get(), 0xFF, 256 * sizeof(float), stream));
  EXPECT_OK(LaunchUpfirdn<float>(stream, x.get(), y.get(), shape, good));
  ASSERT_CUDA(cudaStreamSynchronize(stream));
  const auto out = y.Read();
  for (std::int64_t i = 0; i < shape.outputs; ++i) ASSERT_EQ(out[i], 0.0f) << i;
}

TEST(UpfirdnGpu, EmptyShapesLaunchNothing) {
  REQUIRE_GPU();
  Stream stream;
  const std::vector<float> taps(5, 1.0f);
  const TableView<float> view{taps.data(), 5, SourceKind::kPageableHost};
  const TableView<float> one_tap{taps.data(), 1, SourceKind::kPageableHost};
  UpfirdnShape no_rows, no_outputs;
  ASSERT_TRUE(MakeUpfirdnShape(0, 100, 5, 2, 1, &no_rows).ok());
  ASSERT_TRUE(MakeUpfirdnShape(3, 0, 1, 1, 1, &no_outputs).ok());
  ASSERT_EQ(no_outputs.outputs, 0);
  EXPECT_OK(LaunchUpfirdn<float>(stream, nullptr, nullptr, no_rows, view));
  EXPECT_OK(LaunchUpfirdn<float>(stream, nullptr, nullptr, no_outputs, one_tap));
  ASSERT_CUDA(cudaStreamSynchronize(stream));
}

// A launch captured into a graph, replayed with changed taps: a host table (the graph's own copy,
// changed by UpdateCapturedTable) and a device table (read in place at each replay).
template <class T>
void CheckCapturedReplays(std::int64_t taps_count, std::int64_t up, std::int64_t down,
                          SourceKind source) {
  std::mt19937_64 rng(taps_count + up * 7 + down);
  UpfirdnShape shape;
  ASSERT_TRUE(
      MakeUpfirdnShape(4, UnderSanitizer() ? 2000 : 30000, taps_count, up, down, &shape).ok());
  const auto x = Random<T>(rng, shape.rows * shape.length);
  const std::int64_t total = shape.rows * shape.outputs;
  Stream stream;
  DeviceBuffer<T> in(x.size()), out(total), device_taps(taps_count);
  ASSERT_CUDA(testing::CopyToDevice(in.get(), x.data(), x.size() * sizeof(T)));
  auto taps = Random<T>(rng, taps_count);
  ASSERT_CUDA(testing::CopyToDevice(device_taps.get(), taps.data(), taps_count * sizeof(T)));
  const TableView<T> view = source == SourceKind::kDevice
                                ? TableView<T>{device_taps.get(), taps_count, source}
                                : TableView<T>{taps.data(), taps_count, source};
  cudaGraph_t graph = nullptr;
  LaunchReport report;
  ASSERT_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  const Status launched = LaunchUpfirdn<T>(stream, in.get(), out.get(), shape, view, &report);
  ASSERT_CUDA(cudaStreamEndCapture(stream, &graph));
  ASSERT_OK(launched);
  EXPECT_TRUE(report.captured);
  cudaGraphExec_t exec = nullptr;
  ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 3; ++replay) {
    if (replay > 0) {
      taps = Random<T>(rng, taps_count);  // new taps for this replay
      if (source == SourceKind::kDevice) {
        ASSERT_CUDA(cudaMemcpyAsync(device_taps.get(), taps.data(), taps_count * sizeof(T),
                                    cudaMemcpyHostToDevice, stream));
      } else {
        ASSERT_OK(UpdateCapturedTable(
            report.capture, TableView<T>{taps.data(), taps_count, SourceKind::kPageableHost},
            stream));
      }
    }
    std::vector<T> expected(total);
    UpfirdnCpuRange(x.data(), expected.data(), shape, taps.data(), 0, total);
    ASSERT_CUDA(cudaMemsetAsync(out.get(), 0xFF, total * sizeof(T), stream));
    ASSERT_CUDA(cudaGraphLaunch(exec, stream));
    ASSERT_CUDA(cudaStreamSynchronize(stream));
    std::size_t where = 0;
    ASSERT_TRUE(SameBitsOrBothNan(out.Read(), expected, &where))
        << "replay " << replay << ", " << taps_count << " taps, up " << up << ", down " << down
        << ", " << PlacementName(report.placement) << ": output " << where;
  }
  ASSERT_CUDA(cudaGraphExecDestroy(exec));
  ASSERT_CUDA(cudaGraphDestroy(graph));
}

TEST(UpfirdnGpu, CapturedGraphReplaysWithChangedTaps) {
  REQUIRE_GPU();
  for (SourceKind source : {SourceKind::kPageableHost, SourceKind::kDevice}) {
    CheckCapturedReplays<float>(3201, 160, 147, source);    // shared memory, phase per lane
    CheckCapturedReplays<float>(2000, 3, 1, source);        // a device buffer, phase per warp
    CheckCapturedReplays<double>(1000, 1, 2, source);       // 8 KB: not by value
    CheckCapturedReplays<float>(20000, 1, 1, source);       // chunks of terms, global memory
    CheckCapturedReplays<float>(31005, 2560, 147, source);  // tiled, phase per lane, global
  }
}

}  // namespace
}  // namespace ops
}  // namespace constmem
