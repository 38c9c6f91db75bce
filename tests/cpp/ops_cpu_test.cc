// SPDX-License-Identifier: Apache-2.0
// Polyval's and FirFilter's CPU kernels against their scalar definitions (std::fma, one rounding
// per step), for every instruction set this CPU supports: random sizes, ranges and tables, and
// special values with and without the denormal flush. Bitwise equality is the contract.
// Interpolate's against np.interp's formula in long double, and its exact cases. For float16 and
// bfloat16 data (Polyval, Interpolate, FirFilter), each against the float32 kernel on the
// converted data, each result rounded to nearest even (FromCompute), bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "constmem/cpu_isa.hpp"
#include "constmem/numeric.hpp"
#include "constmem/op_description.hpp"
#include "cpu_test_support.h"
#include "fir_filter/fir_filter_cpu.h"
#include "fir_filter/fir_filter_functor.h"
#include "interpolate/interpolate_cpu.h"
#include "interpolate/interpolate_op.h"
#include "narrow_test_support.h"
#include "polyval/polyval_cpu.h"
#include "polyval/polyval_functor.h"
#include "polyval/polyval_op.h"

namespace constmem {
namespace {

using cpu::Isa;

class OpsCpu : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!cpu::IsaSupported(GetParam()))
      GTEST_SKIP() << "this CPU lacks " << cpu::IsaName(GetParam());
  }
};

template <class T>
bool SameBits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

template <class T>
void ExpectPolyvalMatches(Isa isa, const std::vector<T>& x, const std::vector<T>& coeffs,
                          std::int64_t begin, std::int64_t end) {
  std::vector<T> y(x.size(), T(7)), expected(x.size(), T(7));
  ops::PolyvalCpuRange(x.data(), y.data(), begin, end, coeffs.data(),
                       static_cast<std::int64_t>(coeffs.size()), isa);
  for (std::int64_t i = begin; i < end; ++i)
    expected[i] =
        ops::PolyvalElement(x[i], coeffs.data(), static_cast<std::int64_t>(coeffs.size()));
  EXPECT_TRUE(SameBits(y, expected))
      << cpu::IsaName(isa) << ": " << x.size() << " elements, [" << begin << ", " << end << "), "
      << coeffs.size() << " coefficients";
}

template <class T>
void PolyvalRandomCases(Isa isa) {
  std::mt19937_64 rng(17 + static_cast<unsigned>(isa) + sizeof(T));
  std::uniform_real_distribution<double> uniform(-1.5, 1.5);
  for (int trial = 0; trial < 40; ++trial) {
    const std::int64_t size = std::uniform_int_distribution<std::int64_t>(0, 2000)(rng);
    const std::int64_t begin = std::uniform_int_distribution<std::int64_t>(0, size)(rng);
    const std::int64_t end = std::uniform_int_distribution<std::int64_t>(begin, size)(rng);
    std::vector<T> x(size), coeffs(trial % 8 == 0 ? 4096 : 1 + rng() % 65);
    for (auto& v : x) v = static_cast<T>(uniform(rng));
    for (auto& v : coeffs) v = static_cast<T>(uniform(rng));
    ExpectPolyvalMatches(isa, x, coeffs, begin, end);
  }
}

TEST_P(OpsCpu, PolyvalRandomSizesRangesAndDegrees) {
  PolyvalRandomCases<float>(GetParam());
  PolyvalRandomCases<double>(GetParam());
}

template <class T>
void PolyvalSpecialCases(Isa isa, bool flush) {
  ScopedFlushDenormals mode(flush);
  std::vector<T> x;
  for (int repeat = 0; repeat < 40; ++repeat) {
    const auto specials = SpecialValues<T>();
    x.insert(x.end(), specials.begin(), specials.end());
  }
  for (const auto& coeffs :
       std::vector<std::vector<T>>{{T(1)},
                                   {T(0.5), T(-2), T(0), T(3)},
                                   {std::numeric_limits<T>::max(), T(1), T(-1)},
                                   {T(-0.0)},  // y = coeffs[0]: a negative zero stays one
                                   {T(-0.0), T(-0.0), T(2), T(-0.0)}}) {
    ExpectPolyvalMatches(isa, x, coeffs, 0, static_cast<std::int64_t>(x.size()));
  }
}

TEST_P(OpsCpu, PolyvalSpecialValuesWithAndWithoutDenormalFlush) {
  for (bool flush : {false, true}) {
    PolyvalSpecialCases<float>(GetParam(), flush);
    PolyvalSpecialCases<double>(GetParam(), flush);
  }
}

template <class T>
void ExpectFirMatches(Isa isa, const std::vector<T>& x, const ops::FirShape& shape,
                      const std::vector<T>& taps, std::int64_t begin, std::int64_t end) {
  const auto total = static_cast<std::size_t>(shape.rows * shape.outputs);
  std::vector<T> y(total, T(7)), expected(total, T(7));
  ops::FirFilterCpuRange(x.data(), y.data(), shape, taps.data(), begin, end, isa);
  for (std::int64_t i = begin; i < end; ++i) {
    const std::int64_t row = i / shape.outputs;
    expected[i] =
        ops::FirOutput(x.data() + row * shape.length, shape, taps.data(), i % shape.outputs);
  }
  EXPECT_TRUE(SameBits(y, expected))
      << cpu::IsaName(isa) << ": " << shape.rows << " x " << shape.length << ", " << shape.taps
      << " taps, [" << begin << ", " << end << ")";
}

template <class T>
void FirRandomCases(Isa isa) {
  std::mt19937_64 rng(29 + static_cast<unsigned>(isa) + sizeof(T));
  std::normal_distribution<double> normal(0.0, 1.0);
  for (int trial = 0; trial < 60; ++trial) {
    // Up to 40 rows: the AVX-512 float kernel takes whole groups of 16 rows transposed.
    const std::int64_t rows = trial % 3 == 0 ? 16 + rng() % 25 : 1 + rng() % 4;
    const std::int64_t length = trial % 10 == 0 ? 5000 + rng() % 300 : rng() % 400;
    const std::int64_t taps = trial % 7 == 0 ? 2048 : 1 + rng() % 80;
    const auto padding = trial % 2 ? ops::FirPadding::kSame : ops::FirPadding::kValid;
    const ops::FirShape shape = ops::MakeFirShape(rows, length, taps, padding);
    std::vector<T> x(rows * length), tap_values(taps);
    for (auto& v : x) v = static_cast<T>(normal(rng));
    for (auto& v : tap_values) v = static_cast<T>(normal(rng));
    const std::int64_t total = rows * shape.outputs;
    const std::int64_t begin = std::uniform_int_distribution<std::int64_t>(0, total)(rng);
    const std::int64_t end = std::uniform_int_distribution<std::int64_t>(begin, total)(rng);
    ExpectFirMatches(isa, x, shape, tap_values, begin, end);
  }
}

TEST_P(OpsCpu, FirFilterRandomShapesPaddingsAndRanges) {
  FirRandomCases<float>(GetParam());
  FirRandomCases<double>(GetParam());
}

// Filters past the GPU's tiled kernels (2,048 taps) and far longer than the rows: the row kernels
// (the transposed ones stop at 2,048 taps), every output a chunk with zero padding at both ends.
template <class T>
void FirLongCases(Isa isa) {
  std::mt19937_64 rng(71 + static_cast<unsigned>(isa) + sizeof(T));
  std::normal_distribution<double> normal(0.0, 1.0);
  struct Case {
    std::int64_t rows, length, taps;
    ops::FirPadding padding;
  };
  const Case cases[] = {
      {17, 300, 2048, ops::FirPadding::kSame},  {17, 300, 2049, ops::FirPadding::kSame},
      {3, 5000, 4097, ops::FirPadding::kValid}, {2, 700, 4097, ops::FirPadding::kSame},
      {1, 90, 20000, ops::FirPadding::kSame},   {2, 20100, 20000, ops::FirPadding::kValid},
  };
  for (const Case& c : cases) {
    const ops::FirShape shape = ops::MakeFirShape(c.rows, c.length, c.taps, c.padding);
    std::vector<T> x(c.rows * c.length), tap_values(c.taps);
    for (auto& v : x) v = static_cast<T>(normal(rng));
    for (auto& v : tap_values) v = static_cast<T>(normal(rng));
    const std::int64_t total = c.rows * shape.outputs;
    ExpectFirMatches(isa, x, shape, tap_values, 0, total);
    ExpectFirMatches(isa, x, shape, tap_values, total / 3, total - 1);  // ranges in mid-row
  }
}

TEST_P(OpsCpu, FirFilterLongFiltersPastTheOldLimit) {
  FirLongCases<float>(GetParam());
  FirLongCases<double>(GetParam());
}

TEST_P(OpsCpu, FirFilterSpecialValuesWithAndWithoutDenormalFlush) {
  for (bool flush : {false, true}) {
    ScopedFlushDenormals mode(flush);
    std::vector<float> x;
    for (int repeat = 0; repeat < 30; ++repeat) {
      const auto specials = SpecialValues<float>();
      x.insert(x.end(), specials.begin(), specials.end());
    }
    const std::vector<float> taps = {0.5f, -2.0f, 0.0f, 3.0f, 1.0f};
    const auto shape =
        ops::MakeFirShape(1, static_cast<std::int64_t>(x.size()), 5, ops::FirPadding::kSame);
    ExpectFirMatches(GetParam(), x, shape, taps, 0, shape.outputs);
    // 17 rows (a group of 16 and one more) and 19 taps with zeros of both signs: the kernels
    // that take several taps at a time.
    std::vector<float> rows;
    for (int row = 0; row < 17; ++row) rows.insert(rows.end(), x.begin() + row, x.end() - 17 + row);
    const std::vector<float> long_taps = {0.5f,  -0.0f, 2.0f,  0.0f,  -3.0f, 1.0f,  0.25f,
                                          -1.0f, 4.0f,  -0.0f, 0.75f, 1.5f,  -2.0f, 0.0f,
                                          8.0f,  -0.5f, 1.0f,  -1.0f, 0.125f};
    const auto long_shape =
        ops::MakeFirShape(17, static_cast<std::int64_t>(x.size()) - 17, 19, ops::FirPadding::kSame);
    ExpectFirMatches(GetParam(), rows, long_shape, long_taps, 0, 17 * long_shape.outputs);
  }
}

// float16 and bfloat16 over [begin, end): FromCompute of the float kernel's outputs (the same
// instruction set) on the samples converted to float; the rest of y untouched.
template <class H>
void ExpectNarrowFirMatches(Isa isa, const std::vector<H>& x, const ops::FirShape& shape,
                            const std::vector<float>& taps, std::int64_t begin, std::int64_t end) {
  const auto total = static_cast<std::size_t>(shape.rows * shape.outputs);
  const std::vector<float> wide = ToFloat(x);
  std::vector<float> wide_y(total);
  ops::FirFilterCpuRange(wide.data(), wide_y.data(), shape, taps.data(), 0,
                         static_cast<std::int64_t>(total), isa);
  std::vector<H> y(total, H{0x1234}), expected(total, H{0x1234});
  for (std::int64_t i = begin; i < end; ++i) expected[i] = FromCompute<H>(wide_y[i]);
  ops::FirFilterCpuRange(x.data(), y.data(), shape, taps.data(), begin, end, isa);
  const std::int64_t at = FirstNarrowDifference(y, expected);
  EXPECT_EQ(at, -1) << NarrowName<H>() << ", " << cpu::IsaName(isa) << ": " << shape.rows << " x "
                    << shape.length << ", " << shape.taps << " taps, pad " << shape.pad_left
                    << ", [" << begin << ", " << end << ")";
}

// Random shapes, paddings and ranges (groups of 16 rows, rows longer than a 4,096-output chunk,
// filters past 2,048 taps), samples one in eight a special value (NaN, infinities, subnormal
// halves), taps now and then NaN, infinite, subnormal or large enough to overflow 16 bits.
template <class H>
void FirNarrowCases(Isa isa, bool flush) {
  ScopedFlushDenormals mode(flush);
  std::mt19937_64 rng(31 + static_cast<unsigned>(isa) + flush);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const auto specials = NarrowSpecialValues<H>();
  const std::vector<float> tap_specials = {std::numeric_limits<float>::quiet_NaN(),
                                           std::numeric_limits<float>::infinity(),
                                           -0.0f,
                                           std::numeric_limits<float>::denorm_min(),
                                           1e5f,
                                           -3e38f};
  for (int trial = 0; trial < (flush ? 8 : 24); ++trial) {
    const std::int64_t rows = trial % 3 == 0 ? 16 + rng() % 25 : 1 + rng() % 4;
    const std::int64_t length = trial % 8 == 0 ? 9000 + rng() % 300 : rng() % 400;
    const std::int64_t taps = trial % 7 == 5 ? 2048 + rng() % 2 : 1 + rng() % 80;
    const auto padding = trial % 2 ? ops::FirPadding::kSame : ops::FirPadding::kValid;
    const ops::FirShape shape = ops::MakeFirShape(rows, length, taps, padding);
    std::vector<H> x(rows * length);
    std::vector<float> tap_values(taps);
    const bool special = trial % 4 == 1;
    for (auto& v : x) {
      v = special && rng() % 8 == 0 ? specials[rng() % specials.size()]
                                    : FromCompute<H>(normal(rng));
    }
    for (auto& v : tap_values) {
      v = special && rng() % 16 == 0 ? tap_specials[rng() % tap_specials.size()] : normal(rng);
    }
    const std::int64_t total = rows * shape.outputs;
    ExpectNarrowFirMatches(isa, x, shape, tap_values, 0, total);
    const std::int64_t begin = std::uniform_int_distribution<std::int64_t>(0, total)(rng);
    const std::int64_t end = std::uniform_int_distribution<std::int64_t>(begin, total)(rng);
    ExpectNarrowFirMatches(isa, x, shape, tap_values, begin, end);
  }
}

TEST_P(OpsCpu, FirFilterHalfPrecisionIsTheFloatKernelRoundedToNearestEven) {
  for (bool flush : {false, true}) {
    FirNarrowCases<Float16>(GetParam(), flush);
    FirNarrowCases<BFloat16>(GetParam(), flush);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryInstructionSet, OpsCpu,
                         ::testing::Values(Isa::kPortable, Isa::kAvx2, Isa::kAvx512),
                         [](const auto& info) { return std::string(cpu::IsaName(info.param)); });

// np.interp(x, np.linspace(lo, hi, n), knots), in long double.
long double InterpReference(long double x, const std::vector<long double>& knots, long double lo,
                            long double hi) {
  const std::size_t last = knots.size() - 1;
  const long double step = (hi - lo) / static_cast<long double>(last);
  if (x <= lo) return knots[0];
  if (x >= hi) return knots[last];
  std::size_t j = static_cast<std::size_t>((x - lo) / step);
  if (j >= last) j = last - 1;
  const long double left = lo + step * static_cast<long double>(j);
  return knots[j] + (x - left) * (knots[j + 1] - knots[j]) / step;
}

template <class T>
void InterpolateAgainstReference(std::int64_t n, double lo, double hi, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> knot(-2.0, 2.0);
  const double margin = 0.1 * (hi - lo);
  std::uniform_real_distribution<double> point(lo - margin, hi + margin);
  std::vector<T> knots(n);
  std::vector<long double> wide(n);
  for (std::int64_t i = 0; i < n; ++i) wide[i] = knots[i] = static_cast<T>(knot(rng));
  std::vector<T> x(5000), y(5000);
  for (auto& v : x) v = static_cast<T>(point(rng));
  ops::InterpolateGrid<T> grid{};
  ASSERT_TRUE(ops::MakeInterpolateGrid<T>(lo, hi, n, &grid).ok());
  ops::InterpolateCpuRange(x.data(), y.data(), 0, 5000, knots.data(), grid);
  // Rounding t to T moves the point by up to eps * t knot spacings.
  const long double eps = std::numeric_limits<T>::epsilon();
  const long double tolerance = 8 * eps * (4.0L * static_cast<long double>(n) + 2.0L);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const long double expected =
        InterpReference(x[i], wide, static_cast<T>(lo), static_cast<T>(hi));
    ASSERT_LE(std::fabs(static_cast<long double>(y[i]) - expected), tolerance)
        << n << " knots over [" << lo << ", " << hi << "], x = " << x[i];
  }
}

TEST(InterpolateCpu, MatchesNumpysFormulaInLongDouble) {
  std::uint64_t seed = 3;
  for (std::int64_t n : {2, 3, 16, 1000, 16384}) {
    for (auto range : {std::pair<double, double>{0.0, 1.0}, {-3.5, 7.25}, {100.0, 100.5}}) {
      InterpolateAgainstReference<float>(n, range.first, range.second, seed++);
      InterpolateAgainstReference<double>(n, range.first, range.second, seed++);
    }
  }
}

TEST(InterpolateCpu, EndsClampKnotsAreExactAndNanStays) {
  const std::vector<double> knots = {1.0, -2.0, 4.0, 0.5, 3.0};
  ops::InterpolateGrid<double> grid{};
  ASSERT_TRUE(ops::MakeInterpolateGrid<double>(-1.0, 1.0, 5, &grid).ok());
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> x = {-1.0, -0.5, 0.0, 0.5, 1.0, -7.0, 9.0, -inf, inf, -0.75, 0.25};
  std::vector<double> y(x.size());
  ops::InterpolateCpuRange(x.data(), y.data(), 0, static_cast<std::int64_t>(x.size()), knots.data(),
                           grid);
  const std::vector<double> expected = {1.0, -2.0, 4.0, 0.5, 3.0, 1.0, 3.0, 1.0, 3.0, -0.5, 2.25};
  EXPECT_EQ(y, expected);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  double out = 0;
  ops::InterpolateCpuRange(&nan, &out, 0, 1, knots.data(), grid);
  EXPECT_TRUE(std::isnan(out));
}

TEST(InterpolateCpu, RejectsBadKnotCountsAndRanges) {
  ops::InterpolateGrid<float> grid{};
  EXPECT_FALSE(ops::MakeInterpolateGrid<float>(0.0, 1.0, 1, &grid).ok());
  EXPECT_FALSE(
      ops::MakeInterpolateGrid<float>(0.0, 1.0, ops::kInterpolateMaxKnots + 1, &grid).ok());
  EXPECT_FALSE(ops::MakeInterpolateGrid<float>(1.0, 1.0, 4, &grid).ok());
  EXPECT_FALSE(ops::MakeInterpolateGrid<float>(2.0, 1.0, 4, &grid).ok());
  EXPECT_FALSE(ops::MakeInterpolateGrid<float>(0.0, std::nan(""), 4, &grid).ok());
  EXPECT_FALSE(ops::MakeInterpolateGrid<float>(-3e38, 3e38, 4, &grid).ok());  // spacing overflows
  EXPECT_FALSE(ops::MakeInterpolateGrid<float>(1.0, 1.0 + 1e-9, 4, &grid).ok());  // one float
  EXPECT_TRUE(ops::MakeInterpolateGrid<float>(0.0, 1.0, ops::kInterpolateMaxKnots, &grid).ok());
}

// float16 and bfloat16 data: computed in float32, every result the float32 kernel's on the
// converted data rounded to nearest even, bit for bit (NaNs included: both sides are the CPU's).
// Every one of the 65,536 bit patterns as x (NaNs with payloads, infinities, subnormals, the
// largest finite values), and results that overflow the 16-bit range, round to its largest value
// or to infinity, or land among its subnormals.

class NarrowOpsCpu : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!cpu::IsaSupported(GetParam()))
      GTEST_SKIP() << "this CPU lacks " << cpu::IsaName(GetParam());
  }
};

template <class In>
const char* NarrowName() {
  return std::is_same<In, Float16>::value ? "float16" : "bfloat16";
}

template <class In>
std::vector<In> EveryBitPattern() {
  std::vector<In> x(65536);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = In{static_cast<std::uint16_t>(i)};
  return x;
}

template <class In>
std::vector<In> RandomNarrow(std::mt19937_64& rng, std::size_t n, double lo, double hi) {
  std::uniform_real_distribution<double> uniform(lo, hi);
  std::vector<In> x(n);
  for (auto& v : x) v = FromCompute<In>(static_cast<float>(uniform(rng)));
  return x;
}

template <class In>
std::vector<float> Widen(const std::vector<In>& x) {
  std::vector<float> wide(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) wide[i] = ToCompute<float>(x[i]);
  return wide;
}

// y in [begin, end) against the float32 kernel on the same instruction set (itself checked against
// PolyvalElement here), rounded; the rest of y untouched.
template <class In>
void ExpectNarrowPolyvalMatches(Isa isa, const std::vector<In>& x, const std::vector<float>& coeffs,
                                std::int64_t begin, std::int64_t end) {
  const auto count = static_cast<std::int64_t>(coeffs.size());
  const std::vector<float> wide = Widen(x);
  std::vector<float> wide_y(x.size(), 7.0f);
  ops::PolyvalCpuRange(wide.data(), wide_y.data(), begin, end, coeffs.data(), count, isa);
  const In poison{0x5a5a};
  std::vector<In> y(x.size(), poison), expected(x.size(), poison);
  for (std::int64_t i = begin; i < end; ++i) {
    const float definition = ops::PolyvalElement(wide[i], coeffs.data(), count);
    ASSERT_EQ(std::memcmp(&definition, &wide_y[i], sizeof(float)), 0)
        << "float32 kernel, x = " << wide[i];
    expected[i] = FromCompute<In>(wide_y[i]);
  }
  ops::PolyvalCpuRange(x.data(), y.data(), begin, end, coeffs.data(), count, isa);
  EXPECT_TRUE(SameBits(y, expected))
      << NarrowName<In>() << ", " << cpu::IsaName(isa) << ": " << x.size() << " elements, ["
      << begin << ", " << end << "), " << coeffs.size() << " coefficients";
}

template <class In>
void NarrowPolyvalCases(Isa isa) {
  const float kFloatMax = std::numeric_limits<float>::max();
  const std::vector<In> every = EveryBitPattern<In>();
  const std::vector<std::vector<float>> tables = {
      {1.0f},
      {-0.0f},
      {1.0f, 0.0f},                // y = x: every finite value back as it was
      {0.5f, -2.0f, 0.0f, 3.0f},   // a cubic
      {300.0f, 0.0f, 0.0f},        // past float16's 65,504 for |x| > 14.8
      {1.0f, 65519.0f},            // 65,520 and up round to infinity in float16, 65,519 down
      {1e-4f, 0.0f},               // results among float16's subnormals
      {0x1p-130f, 0.0f},           // float32 subnormal results: 16-bit zeros or subnormals
      {kFloatMax},                 // finite in float32, infinity in bfloat16
      {1e30f, 1e30f, 1e30f},       // float32 overflow
      {-0.0f, -0.0f, 2.0f, -0.0f}  // zeros of both signs
  };
  for (bool flush : {false, true}) {
    ScopedFlushDenormals mode(flush);
    for (const auto& coeffs : tables) {
      ExpectNarrowPolyvalMatches(isa, every, coeffs, 0, static_cast<std::int64_t>(every.size()));
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  std::mt19937_64 rng(91 + static_cast<unsigned>(isa) + sizeof(In));
  std::uniform_real_distribution<double> uniform(-1.5, 1.5);
  for (int trial = 0; trial < 40; ++trial) {
    // Past one chunk of the narrow kernel (3,360 elements) and within one.
    const std::int64_t size = std::uniform_int_distribution<std::int64_t>(0, 9000)(rng);
    const std::int64_t begin = std::uniform_int_distribution<std::int64_t>(0, size)(rng);
    const std::int64_t end = std::uniform_int_distribution<std::int64_t>(begin, size)(rng);
    std::vector<float> coeffs(trial % 8 == 0 ? 4096 : 1 + rng() % 65);
    for (auto& v : coeffs) v = static_cast<float>(uniform(rng));
    ExpectNarrowPolyvalMatches(isa, RandomNarrow<In>(rng, size, -1.5, 1.5), coeffs, begin, end);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST_P(NarrowOpsCpu, PolyvalFloat16AndBFloat16AreTheFloat32KernelRounded) {
  NarrowPolyvalCases<Float16>(GetParam());
  NarrowPolyvalCases<BFloat16>(GetParam());
}

INSTANTIATE_TEST_SUITE_P(EveryInstructionSet, NarrowOpsCpu,
                         ::testing::Values(Isa::kPortable, Isa::kAvx2, Isa::kAvx512),
                         [](const auto& info) { return std::string(cpu::IsaName(info.param)); });

template <class In>
void ExpectNarrowInterpolateMatches(const std::vector<In>& x, const std::vector<float>& knots,
                                    double lo, double hi) {
  const auto n = static_cast<std::int64_t>(knots.size());
  const auto count = static_cast<std::int64_t>(x.size());
  ops::InterpolateGrid<float> grid{};
  ASSERT_TRUE(ops::MakeInterpolateGrid<float>(lo, hi, n, &grid).ok());
  const std::vector<float> wide = Widen(x);
  std::vector<float> wide_y(x.size());
  ops::InterpolateCpuRange(wide.data(), wide_y.data(), 0, count, knots.data(), grid);
  std::vector<In> y(x.size()), expected(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) expected[i] = FromCompute<In>(wide_y[i]);
  ops::InterpolateCpuRange(x.data(), y.data(), 0, count, knots.data(), grid);
  EXPECT_TRUE(SameBits(y, expected))
      << NarrowName<In>() << ": " << n << " knots over [" << lo << ", " << hi << "]";
}

template <class In>
void NarrowInterpolateCases() {
  std::mt19937_64 rng(57 + sizeof(In));
  const std::vector<In> every = EveryBitPattern<In>();
  std::normal_distribution<double> normal(0.0, 1.0);
  auto knots_of = [&](std::int64_t n, double scale) {
    std::vector<float> knots(n);
    for (auto& v : knots) v = static_cast<float>(scale * normal(rng));
    return knots;
  };
  struct Case {
    std::int64_t knots;
    double lo, hi, scale;
  };
  const Case cases[] = {{2, 0.0, 1.0, 1.0},         {5, -1.0, 1.0, 3.0},
                        {1000, -3.5, 7.25, 1.0},    {17, -7e4, 7e4, 1.0},
                        {300, -1.0, 1.0, 1e5},  // results past 65,504
                        {64, -2.0, 2.0, 1e-6},  // float16 subnormal results
                        {64, -2.0, 2.0, 3e38},  // bfloat16 infinities from finite float32 results
                        {16384, 100.0, 100.5, 1.0}, {3, 1.0, 1.0009765625, 1.0}};
  for (const Case& c : cases) {
    ExpectNarrowInterpolateMatches(every, knots_of(c.knots, c.scale), c.lo, c.hi);
    ExpectNarrowInterpolateMatches(
        RandomNarrow<In>(rng, 5000, c.lo - 0.1 * (c.hi - c.lo), c.hi + 0.1 * (c.hi - c.lo)),
        knots_of(c.knots, c.scale), c.lo, c.hi);
  }
  // Between float16's largest value and infinity: 65,504 + f * 32, rounded either way.
  ExpectNarrowInterpolateMatches(every, {65504.0f, 65536.0f}, 0.0, 1.0);
}

TEST(InterpolateCpu, Float16AndBFloat16AreTheFloat32KernelRounded) {
  NarrowInterpolateCases<Float16>();
  NarrowInterpolateCases<BFloat16>();
}

// The op descriptions take float16 and bfloat16 data with float32 tables: RunCpu is the float32
// op's RunCpu on the converted data, rounded. Interpolate checks [lo, hi] in float32 for them,
// whose grid they use.
TEST(NarrowOpDescriptions, RunCpuIsTheFloat32OpRounded) {
  const auto shard = [](std::int64_t count, std::int64_t, const auto& fn) { fn(0, count); };
  for (DataType type : {DataType::kFloat16, DataType::kBFloat16}) {
    EXPECT_TRUE(TakesDataType<ops::PolyvalOp>(type));
    EXPECT_TRUE(TakesDataType<ops::InterpolateOp>(type));
  }
  std::mt19937_64 rng(8);
  const auto check = [&](auto zero) {
    using In = decltype(zero);
    const std::vector<In> x = RandomNarrow<In>(rng, 3001, 0.9, 1.1);
    const std::vector<float> wide = Widen(x);
    const auto count = static_cast<std::int64_t>(x.size());
    std::vector<float> wide_y(x.size());
    std::vector<In> y(x.size()), expected(x.size());
    {
      const std::vector<float> coeffs = {0.25f, -1.0f, 2.0f, 0.125f};
      ops::PolyvalOp::Params params;
      ops::PolyvalOp::Shape shape;
      shape.elements = count;
      ops::PolyvalOp::RunCpu<float>(params, shape, wide.data(), wide_y.data(), coeffs.data(), 4,
                                    shard);
      ops::PolyvalOp::RunCpu<In>(params, shape, x.data(), y.data(), coeffs.data(), 4, shard);
      for (std::size_t i = 0; i < x.size(); ++i) expected[i] = FromCompute<In>(wide_y[i]);
      EXPECT_TRUE(SameBits(y, expected)) << "Polyval, " << NarrowName<In>();
    }
    {
      const std::vector<float> knots = {1.0f, -2.0f, 4.0f, 0.5f, 3.0f};
      AttrValue attrs[2];
      attrs[0].float64 = 1.0;
      attrs[1].float64 = 1.0 + 1.0 / 4096;  // rounds to lo in float16 and bfloat16
      ops::InterpolateOp::Params params;
      ASSERT_TRUE(params.Read(attrs, DataTypeOf<In>()).ok()) << NarrowName<In>();
      ASSERT_TRUE(params.CheckGrid(5).ok());
      ops::InterpolateOp::Shape shape;
      shape.elements = count;
      ops::InterpolateOp::RunCpu<float>(params, shape, wide.data(), wide_y.data(), knots.data(), 5,
                                        shard);
      ops::InterpolateOp::RunCpu<In>(params, shape, x.data(), y.data(), knots.data(), 5, shard);
      for (std::size_t i = 0; i < x.size(); ++i) expected[i] = FromCompute<In>(wide_y[i]);
      EXPECT_TRUE(SameBits(y, expected)) << "Interpolate, " << NarrowName<In>();
      attrs[1].float64 = 1.0 + 1e-9;  // one float32: refused for float16 data as for float32
      EXPECT_FALSE(params.Read(attrs, DataTypeOf<In>()).ok()) << NarrowName<In>();
    }
  };
  check(Float16{});
  check(BFloat16{});
}

// Known roundings, independent of FromCompute: float16's largest value, the tie above it (to
// infinity, the even neighbour), subnormals, and bfloat16's overflow of a finite float32.
TEST(NarrowOpDescriptions, PolyvalRoundsToNearestEven) {
  const std::vector<float> shift = {1.0f, 65519.0f};  // y = x + 65,519
  const std::vector<Float16> x = {Float16{0x3800}, Float16{0x3c00}, Float16{0xbc00},
                                  Float16{0x0001}};  // 0.5, 1, -1, 2^-24
  std::vector<Float16> y(x.size());
  ops::PolyvalCpuRange(x.data(), y.data(), 0, 4, shift.data(), 2);
  // 65,519.5 -> 65,504; 65,520 (a tie) -> infinity; 65,518 -> 65,504 (the spacing is 32 there);
  // 65,519 + 2^-24 -> 65,504.
  const std::uint16_t expected_half[] = {0x7bff, 0x7c00, 0x7bff, 0x7bff};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y[i].bits, expected_half[i]) << i;
  const std::vector<float> tiny = {0x1p-25f, 0.0f};  // y = x * 2^-25
  ops::PolyvalCpuRange(x.data(), y.data(), 0, 4, tiny.data(), 2);
  // 2^-26 -> 0; 2^-25 (a tie) -> 0; -2^-25 -> -0; 2^-49 -> 0.
  const std::uint16_t expected_tiny[] = {0x0000, 0x0000, 0x8000, 0x0000};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y[i].bits, expected_tiny[i]) << i;
  const std::vector<float> largest = {std::numeric_limits<float>::max()};
  const std::vector<BFloat16> b = {BFloat16{0x3f80}};
  std::vector<BFloat16> c(1);
  ops::PolyvalCpuRange(b.data(), c.data(), 0, 1, largest.data(), 1);
  EXPECT_EQ(c[0].bits, 0x7f80);  // float32's largest rounds past bfloat16's (0x7f7f)
  const std::vector<float> third = {1.0f / 3.0f};
  ops::PolyvalCpuRange(b.data(), c.data(), 0, 1, third.data(), 1);
  EXPECT_EQ(c[0].bits, 0x3eab);  // 0x3eaaaaab rounds up
}

}  // namespace
}  // namespace constmem
