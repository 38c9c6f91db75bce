// SPDX-License-Identifier: Apache-2.0
// Frobulate's CPU kernel against the scalar per-element loop, for every instruction set this CPU
// supports: random lengths, offsets and tables, and special values, with and without the denormal
// flush TensorFlow's CPU threads run under. Bitwise equality is the contract.
#include "frobulate/frobulate_cpu.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "constmem/cpu_isa.hpp"
#include "cpu_test_support.h"
#include "frobulate/frobulate_functor.h"

namespace constmem {
namespace {

using cpu::Isa;

template <class T>
void ExpectMatchesScalar(Isa isa, const std::vector<T>& data,
                         const std::vector<std::int32_t>& table, std::int64_t begin,
                         std::int64_t end) {
  std::vector<T> converted(table.begin(), table.end());
  std::vector<T> out(data.size(), T(7)), expected(data.size(), T(7));
  ops::FrobulateCpuRange(data.data(), out.data(), begin, end, converted.data(),
                         static_cast<std::int64_t>(table.size()), isa);
  ops::FrobulateRange(data.data(), expected.data(), begin, end, table.data(),
                      static_cast<std::int64_t>(table.size()));
  ASSERT_TRUE(data.empty() ||
              std::memcmp(out.data(), expected.data(), data.size() * sizeof(T)) == 0)
      << cpu::IsaName(isa) << " differs: " << data.size() << " elements, range [" << begin << ", "
      << end << "), " << table.size() << " entries";
}

class FrobulateCpu : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!cpu::IsaSupported(GetParam()))
      GTEST_SKIP() << "this CPU lacks " << cpu::IsaName(GetParam());
  }
};

template <class T>
void RandomCases(Isa isa) {
  std::mt19937_64 rng(static_cast<unsigned>(isa) * 1000 + sizeof(T));
  for (int trial = 0; trial < 60; ++trial) {
    const std::int64_t size = std::uniform_int_distribution<std::int64_t>(0, 3000)(rng);
    const std::int64_t begin =
        size == 0 ? 0 : std::uniform_int_distribution<std::int64_t>(0, size)(rng);
    const std::int64_t end = std::uniform_int_distribution<std::int64_t>(begin, size)(rng);
    const int entries =
        trial % 10 == 0 ? 16384 / (1 + trial % 3) : 1 + static_cast<int>(rng() % 300);
    std::vector<T> data(size);
    std::normal_distribution<double> normal(0.0, 1e3);
    for (auto& v : data) v = static_cast<T>(normal(rng));
    std::vector<std::int32_t> table(entries);
    for (auto& v : table) v = static_cast<std::int32_t>(rng());  // the whole int32 range
    ExpectMatchesScalar(isa, data, table, begin, end);
  }
}

TEST_P(FrobulateCpu, RandomLengthsOffsetsAndTables) {
  RandomCases<float>(GetParam());
  RandomCases<double>(GetParam());
}

template <class T>
void SpecialCases(Isa isa, bool flush) {
  ScopedFlushDenormals mode(flush);
  std::vector<T> data = SpecialValues<T>();
  for (int repeat = 0; repeat < 40; ++repeat) {  // past one tile, so the vector path sees them too
    const auto specials = SpecialValues<T>();
    data.insert(data.end(), specials.begin(), specials.end());
  }
  for (const auto& table :
       std::vector<std::vector<std::int32_t>>{{0},
                                              {1},
                                              {-1, 1},
                                              {std::numeric_limits<std::int32_t>::max()},
                                              {std::numeric_limits<std::int32_t>::min(), 3, -2}}) {
    ExpectMatchesScalar(isa, data, table, 0, static_cast<std::int64_t>(data.size()));
  }
}

TEST_P(FrobulateCpu, SpecialValuesWithAndWithoutDenormalFlush) {
  for (bool flush : {false, true}) {
    SpecialCases<float>(GetParam(), flush);
    SpecialCases<double>(GetParam(), flush);
  }
}

template <class T>
void LargeAlignedOutput(Isa isa) {
  // Past the size from which the widest kernel writes with streaming stores, and in place.
  const std::size_t n = (std::size_t{5} << 20) / sizeof(T) + 37;
  T* buffer = static_cast<T*>(std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64));
  std::mt19937_64 rng(5);
  std::vector<T> data(n), expected(n);
  for (auto& v : data) v = static_cast<T>(static_cast<std::int64_t>(rng() % 20001) - 10000) / 8;
  const std::vector<std::int32_t> table = {3, -7, 1000, 2147483647};
  const std::vector<T> converted(table.begin(), table.end());
  std::copy(data.begin(), data.end(), buffer);
  ops::FrobulateCpuRange(buffer, buffer, 0, static_cast<std::int64_t>(n), converted.data(), 4, isa);
  ops::FrobulateRange(data.data(), expected.data(), 0, static_cast<std::int64_t>(n), table.data(),
                      4);
  EXPECT_EQ(std::memcmp(buffer, expected.data(), n * sizeof(T)), 0) << cpu::IsaName(isa);
  std::free(buffer);
}

TEST_P(FrobulateCpu, LargeAlignedOutputsInPlace) {
  LargeAlignedOutput<float>(GetParam());
  LargeAlignedOutput<double>(GetParam());
}

TEST_P(FrobulateCpu, LargestValuesStayLargest) {
  const std::vector<float> data(1000, std::numeric_limits<float>::max());
  ExpectMatchesScalar(GetParam(), data, std::vector<std::int32_t>(64, 2147483647), 0, 1000);
}

INSTANTIATE_TEST_SUITE_P(EveryInstructionSet, FrobulateCpu,
                         ::testing::Values(Isa::kPortable, Isa::kAvx2, Isa::kAvx512),
                         [](const auto& info) { return std::string(cpu::IsaName(info.param)); });

TEST(CpuIsa, BestIsTheWidestSupportedUnderTheCap) {
  EXPECT_TRUE(cpu::IsaSupported(Isa::kPortable));
  const char* cap_env = std::getenv("CONSTMEM_CPU_ISA");
  const std::string cap = cap_env != nullptr ? cap_env : "";
  if (cap == "portable") {
    EXPECT_EQ(cpu::BestIsa(), Isa::kPortable);
  } else if (cpu::IsaSupported(Isa::kAvx512) && cap != "avx2") {
    EXPECT_EQ(cpu::BestIsa(), Isa::kAvx512);
  } else if (cpu::IsaSupported(Isa::kAvx2)) {
    EXPECT_EQ(cpu::BestIsa(), Isa::kAvx2);
  } else {
    EXPECT_EQ(cpu::BestIsa(), Isa::kPortable);
  }
}

// /proc/cpuinfo's vendor and family, an independent reading of what cpuid says.
bool HalfRateAvx512FromCpuinfo(bool* known) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, vendor;
  int family = -1;
  while (std::getline(cpuinfo, line) && (vendor.empty() || family < 0)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "vendor_id") vendor = value;
    if (key == "cpu family") family = std::atoi(value.c_str());
  }
  *known = !vendor.empty() && family >= 0;
  return vendor == "AuthenticAMD" && family == 0x19;
}

TEST(CpuIsa, ShuffleHeavyKernelsTakeAvx2WhereAvx512RunsAtHalfRate) {
  bool known = false;
  const bool half_rate = HalfRateAvx512FromCpuinfo(&known);
  if (!known) GTEST_SKIP() << "no /proc/cpuinfo vendor and family";
  EXPECT_EQ(cpu::FullRateAvx512(), !half_rate);
  const Isa expected = cpu::BestIsa() == Isa::kAvx512 && half_rate ? Isa::kAvx2 : cpu::BestIsa();
  EXPECT_EQ(cpu::BestIsaForShuffles(), expected);
}

}  // namespace
}  // namespace constmem
