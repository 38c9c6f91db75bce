// SPDX-License-Identifier: Apache-2.0
// SeparableFilter's CPU kernel: bit for bit against the functor's definition (SeparableOutput) and
// within rounding of an independent reference (two 1-D passes in long double, borders folded by
// repeated reflection), every border, both layouts, shared and per-image taps, odd and even
// kernels, kernels larger than the image, uint8 rounding and clamping, and every instruction set
// bitwise equal to the portable kernel. float16 and bfloat16 against the float32 kernel of the
// converted images, rounded by FromCompute, bit for bit (NaN, infinities, subnormals and sums past
// the type's range among them), and their rounding against an independent reference for every
// 16-bit value.
#include "separable_filter/separable_filter_cpu.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "constmem/cpu_isa.hpp"
#include "constmem/op_description.hpp"
#include "separable_filter/separable_filter_functor.h"
#include "separable_filter/separable_filter_op.h"
#include "separable_filter_test_support.h"

namespace constmem {
namespace ops {
namespace {

using cpu::Isa;

// Independent of SeparableFold: reflect (or clamp) step by step until inside.
std::int64_t ReferenceIndex(std::int64_t i, std::int64_t n, SeparableBorder border) {
  if (border == SeparableBorder::kZeros) return i >= 0 && i < n ? i : -1;
  if (border == SeparableBorder::kReplicate) return std::min(std::max<std::int64_t>(i, 0), n - 1);
  if (n == 1) return 0;
  while (i < 0 || i >= n) {
    if (i < 0) i = -i;
    if (i >= n) i = 2 * (n - 1) - i;
  }
  return i;
}

struct Reference {
  std::vector<long double> value, magnitude;  // the exact-ish result and sum of |terms|
};

// Two 1-D passes in long double, addressing the input by (b, c, y, x) directly.
template <class In, class T>
Reference ReferenceFilter(const std::vector<In>& x, const SeparableShape& s,
                          const std::vector<T>& taps) {
  const std::int64_t n = s.Elements();
  Reference ref;
  ref.value.assign(n, 0);
  ref.magnitude.assign(n, 0);
  auto at = [&](std::int64_t b, std::int64_t c, std::int64_t yy, std::int64_t xx) {
    return s.layout == SeparableLayout::kPlanes
               ? ((b * s.channels + c) * s.height + yy) * s.width + xx
               : ((b * s.height + yy) * s.width + xx) * s.channels + c;
  };
  const std::int64_t cw = (s.kw - 1) / 2, ch = (s.kh - 1) / 2;
  std::vector<long double> tmp(s.height * s.width), tmp_abs(s.height * s.width);
  for (std::int64_t b = 0; b < s.images; ++b) {
    const T* row = taps.data() + (s.per_image_taps ? b * (s.kw + s.kh) : 0);
    const T* col = row + s.kw;
    for (std::int64_t c = 0; c < s.channels; ++c) {
      for (std::int64_t yy = 0; yy < s.height; ++yy) {
        for (std::int64_t xx = 0; xx < s.width; ++xx) {
          long double sum = 0, mag = 0;
          for (std::int64_t j = 0; j < s.kw; ++j) {
            const std::int64_t q = ReferenceIndex(xx + j - cw, s.width, s.border);
            if (q < 0) continue;
            const long double term =
                static_cast<long double>(row[j]) * static_cast<long double>(x[at(b, c, yy, q)]);
            sum += term;
            mag += std::fabs(term);
          }
          tmp[yy * s.width + xx] = sum;
          tmp_abs[yy * s.width + xx] = mag;
        }
      }
      for (std::int64_t yy = 0; yy < s.height; ++yy) {
        for (std::int64_t xx = 0; xx < s.width; ++xx) {
          long double sum = 0, mag = 0;
          for (std::int64_t i = 0; i < s.kh; ++i) {
            const std::int64_t r = ReferenceIndex(yy + i - ch, s.height, s.border);
            if (r < 0) continue;
            sum += static_cast<long double>(col[i]) * tmp[r * s.width + xx];
            mag += std::fabs(static_cast<long double>(col[i])) * tmp_abs[r * s.width + xx];
          }
          ref.value[at(b, c, yy, xx)] = sum;
          ref.magnitude[at(b, c, yy, xx)] = mag;
        }
      }
    }
  }
  return ref;
}

template <class In, class T>
std::vector<In> RunCpu(const std::vector<In>& x, const SeparableShape& s,
                       const std::vector<T>& taps, Isa isa, std::int64_t split = -1) {
  std::vector<In> y(x.size());
  std::memset(y.data(), 7, y.size() * sizeof(In));  // what a missed output would keep
  const std::int64_t units = SeparableFilterCpuUnits(s);
  if (split < 0) split = units / 2;
  SeparableFilterCpuRange(x.data(), y.data(), s, taps.data(), 0, split, isa);  // two shards
  SeparableFilterCpuRange(x.data(), y.data(), s, taps.data(), split, units, isa);
  return y;
}

template <class In, class T>
void RandomData(std::mt19937_64& rng, const SeparableShape& s, std::vector<In>* x,
                std::vector<T>* taps) {
  x->resize(s.Elements());
  taps->resize(s.TableSize());
  if constexpr (sizeof(In) == 1) {
    for (auto& v : *x) v = static_cast<In>(rng() % 256);
    // Mostly a smoothing kernel (sums near 1), with negative taps now and then: values round
    // anywhere in [0, 255] and some clamp at either end.
    std::uniform_real_distribution<double> u(-0.3, 1.0);
    for (auto& v : *taps) v = static_cast<T>(u(rng));
    for (std::int64_t b = 0; b < (s.per_image_taps ? s.images : 1); ++b) {
      for (std::int64_t j = 0; j < s.kw; ++j) (*taps)[b * (s.kw + s.kh) + j] /= s.kw * 0.35f;
      for (std::int64_t i = 0; i < s.kh; ++i) (*taps)[b * (s.kw + s.kh) + s.kw + i] /= s.kh * 0.35f;
    }
  } else {
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (auto& v : *x) v = static_cast<In>(u(rng));
    for (auto& v : *taps) v = static_cast<T>(u(rng));
  }
}

// The kernel in every instruction set this CPU has against the definition bit for bit and the
// reference within rounding (both worked out once for all of them).
template <class In>
void CheckCase(const SeparableShape& s, std::uint64_t seed) {
  using T = ComputeTypeOf<In>;
  ASSERT_TRUE(CheckSeparableArguments(s, s.TableSize()).ok()) << Describe(s);
  std::mt19937_64 rng(seed);
  std::vector<In> x;
  std::vector<T> taps;
  RandomData(rng, s, &x, &taps);
  std::vector<std::pair<Isa, std::vector<In>>> outputs;
  for (Isa isa : {Isa::kPortable, Isa::kAvx2, Isa::kAvx512}) {
    if (cpu::IsaSupported(isa)) outputs.emplace_back(isa, RunCpu(x, s, taps, isa));
  }
  const Reference ref = ReferenceFilter(x, s, taps);
  const long double eps = std::numeric_limits<T>::epsilon();
  const long double gamma = (s.kw + s.kh + 2) * eps;
  for (std::int64_t b = 0; b < s.images; ++b) {
    for (std::int64_t c = 0; c < s.channels; ++c) {
      for (std::int64_t yy = 0; yy < s.height; ++yy) {
        for (std::int64_t xx = 0; xx < s.width; ++xx) {
          const std::int64_t i = SeparableOffset(s, b, c, yy, xx);
          const In defined = SeparableOutput(x.data(), s, taps.data(), b, c, yy, xx);
          const long double bound = gamma * ref.magnitude[i] + 4 * std::numeric_limits<T>::min();
          for (const auto& [isa, y] : outputs) {
            ASSERT_EQ(std::memcmp(&y[i], &defined, sizeof(In)), 0)
                << Describe(s) << " at b " << b << " c " << c << " y " << yy << " x " << xx << ", "
                << cpu::IsaName(isa) << ": " << +y[i] << " vs the definition's " << +defined;
            if constexpr (sizeof(In) == 1) {
              long double expected = std::nearbyint(
                  std::min<long double>(255, std::max<long double>(0, ref.value[i])));
              if (y[i] != expected) {
                // Only where the exact value lies within rounding of a half.
                const long double half = std::floor(ref.value[i]) + 0.5L;
                ASSERT_LE(std::fabs(ref.value[i] - half), bound)
                    << Describe(s) << ": " << +y[i] << " vs " << static_cast<double>(ref.value[i]);
                ASSERT_LE(std::fabs(y[i] - expected), 1);
              }
            } else {
              ASSERT_LE(std::fabs(static_cast<long double>(y[i]) - ref.value[i]), bound)
                  << Describe(s) << " at " << i << ", " << cpu::IsaName(isa);
            }
          }
        }
      }
    }
  }
}

class SeparableCpu : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!cpu::IsaSupported(GetParam()))
      GTEST_SKIP() << "this CPU lacks " << cpu::IsaName(GetParam());
  }
};

std::vector<SeparableShape> Shapes() {
  std::vector<SeparableShape> shapes;
  struct Size {
    std::int64_t b, c, h, w, kh, kw;
  };
  const Size sizes[] = {
      {2, 3, 13, 17, 3, 3},      // odd kernels
      {2, 3, 13, 17, 4, 6},      // even kernels: the centre at (k - 1) / 2
      {1, 2, 9, 40, 1, 5},       // one column tap
      {1, 2, 21, 7, 9, 1},       // one row tap
      {2, 1, 6, 5, 25, 40},      // kernels larger than the image: folded again and again
      {1, 3, 1, 33, 7, 5},       // H = 1
      {1, 3, 35, 1, 5, 7},       // W = 1
      {1, 1, 1, 1, 3, 4},        // one pixel
      {1, 4, 70, 150, 31, 17},   // more than a band of rows, more than a tile of columns
      {3, 2, 33, 67, 127, 2},    // the longest filter of the GPU's fused kernel
      {1, 1, 10, 12, 129, 131},  // past it along both axes, taller and wider than the image
      {1, 2, 7, 9, 301, 5},      // a column filter 40 times the image's height
      {1, 1, 5, 20, 3, 4097},    // a row filter past any constant bank
  };
  for (const Size& z : sizes) {
    for (auto layout : {SeparableLayout::kPlanes, SeparableLayout::kChannelsLast}) {
      for (auto border :
           {SeparableBorder::kZeros, SeparableBorder::kReflect, SeparableBorder::kReplicate}) {
        for (bool per_image : {false, true}) {
          SeparableShape s;
          s.images = z.b;
          s.channels = z.c;
          s.height = z.h;
          s.width = z.w;
          s.kh = z.kh;
          s.kw = z.kw;
          s.layout = layout;
          s.border = border;
          s.per_image_taps = per_image;
          shapes.push_back(s);
        }
      }
    }
  }
  return shapes;
}

TEST(SeparableCpuEveryIsa, EveryBorderLayoutAndTapFormAgainstTheDefinitionAndAReference) {
  std::uint64_t seed = 1;
  for (const SeparableShape& s : Shapes()) {
    CheckCase<float>(s, seed++);
    CheckCase<double>(s, seed++);
    CheckCase<std::uint8_t>(s, seed++);
    if (HasFatalFailure()) return;
  }
}

// 16-bit images (`special` of them SpecialValues) and float32 taps in [-1, 1].
template <class In>
void SixteenBitData(std::mt19937_64& rng, const SeparableShape& s, double special,
                    std::vector<In>* x, std::vector<float>* taps) {
  *x = RandomImages<In>(rng, s.Elements(), special);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  taps->resize(s.TableSize());
  for (auto& v : *taps) v = static_cast<float>(u(rng));
}

// What a 16-bit result must be: the float32 kernel on `isa` over the images converted to float32,
// each output converted back by FromCompute.
template <class In>
std::vector<In> ThroughFloat32(const std::vector<In>& x, const SeparableShape& s,
                               const std::vector<float>& taps, Isa isa) {
  std::vector<float> wide(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) wide[i] = ToCompute<float>(x[i]);
  const std::vector<float> filtered = RunCpu(wide, s, taps, isa);
  std::vector<In> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = FromCompute<In>(filtered[i]);
  return y;
}

// float16 or bfloat16 on every instruction set of this CPU: bit for bit the float32 kernel's
// result rounded (NaN's sign and payload too), and the definition's (any NaN for a NaN).
template <class In>
void CheckSixteenBit(const SeparableShape& s, std::uint64_t seed, double special) {
  std::mt19937_64 rng(seed);
  std::vector<In> x;
  std::vector<float> taps;
  SixteenBitData(rng, s, special, &x, &taps);
  std::vector<In> defined(x.size());
  for (std::int64_t b = 0; b < s.images; ++b) {
    for (std::int64_t c = 0; c < s.channels; ++c) {
      for (std::int64_t yy = 0; yy < s.height; ++yy) {
        for (std::int64_t xx = 0; xx < s.width; ++xx) {
          defined[SeparableOffset(s, b, c, yy, xx)] =
              SeparableOutput(x.data(), s, taps.data(), b, c, yy, xx);
        }
      }
    }
  }
  for (Isa isa : {Isa::kPortable, Isa::kAvx2, Isa::kAvx512}) {
    if (!cpu::IsaSupported(isa)) continue;
    const std::vector<In> got = RunCpu(x, s, taps, isa);
    const std::vector<In> expected = ThroughFloat32(x, s, taps, isa);
    for (std::size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(got[i].bits, expected[i].bits)
          << Describe(s) << ", " << cpu::IsaName(isa) << ", specials " << special << " at " << i
          << ": " << Printable(got[i]) << " vs the float32 kernel's " << Printable(expected[i]);
      ASSERT_TRUE(SameResult(got[i], defined[i]))
          << Describe(s) << ", " << cpu::IsaName(isa) << " at " << i << ": " << Printable(got[i])
          << " vs the definition's " << Printable(defined[i]);
    }
  }
}

TEST(SeparableCpuEveryIsa, SixteenBitFloatsAreTheFloat32KernelRounded) {
  std::uint64_t seed = 7000;
  for (const SeparableShape& s : Shapes()) {
    for (double special : {0.0, 0.004}) {
      CheckSixteenBit<Float16>(s, seed++, special);
      CheckSixteenBit<BFloat16>(s, seed++, special);
      if (HasFatalFailure()) return;
    }
  }
}

// The nearest 16-bit float to v (ties to even), worked out in double from the format's parameters
// (kMantissa bits, exponents down to kMinExponent): independent of numeric.hpp. NaN is any NaN.
template <class In>
std::uint16_t ReferenceRounding(float v) {
  constexpr bool kHalf = std::is_same<In, Float16>::value;
  constexpr int kMantissa = kHalf ? 10 : 7, kMinExponent = kHalf ? -14 : -126;
  constexpr int kBias = kHalf ? 15 : 127, kMaxExponent = kHalf ? 15 : 127;
  const std::uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const std::uint16_t infinity = static_cast<std::uint16_t>((2 * kBias + 1) << kMantissa);
  if (std::isnan(v)) return static_cast<std::uint16_t>(infinity | 1);
  const double a = std::fabs(static_cast<double>(v));
  // The largest finite value plus half its ulp, a tie that rounds to the even infinity.
  const double overflow = std::ldexp(2.0 - std::ldexp(1.0, -kMantissa - 1), kMaxExponent);
  if (a >= overflow) return sign | infinity;
  const int e = a == 0 ? kMinExponent : std::max(std::ilogb(a), kMinExponent);
  const double ulp = std::ldexp(1.0, e - kMantissa);
  const double rounded = std::nearbyint(a / ulp) * ulp;  // a / ulp is exact in double
  if (rounded < std::ldexp(1.0, kMinExponent)) {         // subnormal (or zero)
    return sign | static_cast<std::uint16_t>(rounded / std::ldexp(1.0, kMinExponent - kMantissa));
  }
  const int exponent = std::ilogb(rounded);
  const auto mantissa = static_cast<std::uint16_t>(rounded / std::ldexp(1.0, exponent - kMantissa) -
                                                   (1 << kMantissa));
  return sign | static_cast<std::uint16_t>((exponent + kBias) << kMantissa) | mantissa;
}

// One tap a pass: y = fma(fma(x, a, +0), 1, +0), the float product rounded to In. Every one of the
// 65,536 values of In, times taps that put many products on ties, into the subnormals and past the
// largest finite value, against ReferenceRounding on every instruction set.
template <class In>
void CheckRoundingOfEveryValue() {
  SeparableShape s;
  s.images = 1;
  s.height = 256;
  s.width = 256;
  s.kw = 1;
  s.kh = 1;
  std::vector<In> x(65536);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = FromBits<In>(static_cast<std::uint16_t>(i));
  const int mantissa = std::is_same<In, Float16>::value ? 10 : 7;
  const float near_one = 1.0f + std::ldexp(1.0f, -mantissa - 1);  // products on ties
  for (float tap :
       {1.0f, near_one, -near_one, 0.5f, 1.5f, 3.0f, 0.001f, 1e-30f, 1.0009765625f, 1e30f, 0.0f}) {
    const std::vector<float> taps{tap, 1.0f};
    for (Isa isa : {Isa::kPortable, Isa::kAvx2, Isa::kAvx512}) {
      if (!cpu::IsaSupported(isa)) continue;
      const std::vector<In> y = RunCpu(x, s, taps, isa);
      for (std::size_t i = 0; i < x.size(); ++i) {
        const float product = std::fma(std::fma(ToCompute<float>(x[i]), tap, 0.0f), 1.0f, 0.0f);
        const std::uint16_t expected = ReferenceRounding<In>(product);
        const bool both_nan = IsNaN(y[i]) && IsNaN(FromBits<In>(expected));
        ASSERT_TRUE(y[i].bits == expected || both_nan)
            << cpu::IsaName(isa) << ", tap " << tap << ", x " << Printable(x[i]) << ": "
            << Printable(y[i]) << " vs " << Printable(FromBits<In>(expected));
      }
    }
  }
}

TEST(SeparableSixteenBit, EveryValueRoundsToNearestEvenAsAnIndependentReference) {
  CheckRoundingOfEveryValue<Float16>();
  CheckRoundingOfEveryValue<BFloat16>();
}

template <class In>
void ExpectSameAsPortable(Isa isa, const SeparableShape& s, std::uint64_t seed) {
  using T = ComputeTypeOf<In>;
  std::mt19937_64 rng(seed);
  std::vector<In> x;
  std::vector<T> taps;
  if constexpr (kSixteenBitFloat<In>) {
    SixteenBitData(rng, s, 0.001, &x, &taps);
  } else {
    RandomData(rng, s, &x, &taps);
  }
  const auto units = SeparableFilterCpuUnits(s);
  const auto split = units == 0 ? 0 : static_cast<std::int64_t>(rng() % (units + 1));
  const std::vector<In> got = RunCpu(x, s, taps, isa, split);
  const std::vector<In> portable = RunCpu(x, s, taps, Isa::kPortable);
  ASSERT_TRUE(x.empty() || std::memcmp(got.data(), portable.data(), x.size() * sizeof(In)) == 0)
      << Describe(s) << ", " << cpu::IsaName(isa);
}

TEST_P(SeparableCpu, BitwiseEqualToThePortableKernelOnRandomShapes) {
  std::mt19937_64 rng(static_cast<unsigned>(GetParam()) + 77);
  for (int trial = 0; trial < 60; ++trial) {
    SeparableShape s;
    s.images = 1 + rng() % 3;
    s.channels = 1 + rng() % 4;
    s.height = 1 + rng() % 90;
    s.width = 1 + rng() % 300;
    s.kh = 1 + rng() % (trial % 5 == 0 ? 300 : 20);
    s.kw = 1 + rng() % (trial % 7 == 0 ? 300 : 20);
    s.layout = trial % 2 ? SeparableLayout::kPlanes : SeparableLayout::kChannelsLast;
    s.border = static_cast<SeparableBorder>(trial % 3);
    s.per_image_taps = trial % 4 == 1;
    ExpectSameAsPortable<float>(GetParam(), s, rng());
    ExpectSameAsPortable<double>(GetParam(), s, rng());
    ExpectSameAsPortable<std::uint8_t>(GetParam(), s, rng());
    ExpectSameAsPortable<Float16>(GetParam(), s, rng());
    ExpectSameAsPortable<BFloat16>(GetParam(), s, rng());
  }
}

// uint8 results of sums past [0, 255] both ways, of exact halves, of infinities and NaN: rounded
// and clamped by every instruction set as FromCompute does (NaN to 0).
TEST_P(SeparableCpu, Uint8ExtremesRoundAndClampAsTheDefinition) {
  SeparableShape s;
  s.images = 1;
  s.height = 3;
  s.width = 40;  // two vectors and a partial one at AVX-512's 16 lanes
  s.kw = 1;
  s.kh = 1;
  s.border = SeparableBorder::kZeros;
  std::vector<std::uint8_t> x(s.Elements());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::uint8_t>(i * 37 % 256);
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (float row_tap : {0.5f, -0.5f, 1.5f, 3e9f, -3e9f, 1e38f, inf, -inf, nan, 0.0f, -0.0f}) {
    const std::vector<float> taps{row_tap, 1.0f};
    const std::vector<std::uint8_t> got = RunCpu(x, s, taps, GetParam());
    for (std::size_t i = 0; i < x.size(); ++i) {
      const float sum = std::fma(static_cast<float>(x[i]), row_tap, 0.0f);
      const float value = std::fma(sum, 1.0f, 0.0f);
      ASSERT_EQ(got[i], FromCompute<std::uint8_t>(value))
          << "tap " << row_tap << ", pixel " << static_cast<int>(x[i]) << ", "
          << cpu::IsaName(GetParam());
    }
  }
}

// The default instruction set (BestIsa, capped by CONSTMEM_CPU_ISA in the capped ctest runs).
TEST(SeparableCpuDefault, TheRunTimeChoiceMatchesThePortableKernel) {
  SeparableShape s;
  s.images = 2;
  s.channels = 3;
  s.height = 50;
  s.width = 301;
  s.kh = 17;
  s.kw = 9;
  std::mt19937_64 rng(3);
  std::vector<float> x, taps;
  RandomData(rng, s, &x, &taps);
  std::vector<float> y(x.size()), portable(x.size());
  const std::int64_t units = SeparableFilterCpuUnits(s);
  SeparableFilterCpuRange(x.data(), y.data(), s, taps.data(), 0, units);
  SeparableFilterCpuRange(x.data(), portable.data(), s, taps.data(), 0, units, Isa::kPortable);
  EXPECT_EQ(std::memcmp(y.data(), portable.data(), x.size() * sizeof(float)), 0)
      << cpu::IsaName(cpu::BestIsa());
}

INSTANTIATE_TEST_SUITE_P(EveryInstructionSet, SeparableCpu,
                         ::testing::Values(Isa::kPortable, Isa::kAvx2, Isa::kAvx512),
                         [](const auto& info) { return std::string(cpu::IsaName(info.param)); });

TEST(SeparableFold, ReflectsAsReflect101AndFoldsAgain) {
  const auto fold = [](std::int64_t i, std::int64_t n) {
    return SeparableFold<std::int64_t>(i, n, SeparableBorder::kReflect);
  };
  // 0 1 2 3 2 1 | 0 1 2 3 | 2 1 0: period 2n - 2.
  const std::int64_t expected[] = {0, 1, 2, 3, 2, 1, 0, 1, 2, 3, 2, 1, 0};
  for (std::int64_t i = -6; i <= 6; ++i) EXPECT_EQ(fold(i, 4), expected[i + 6]) << i;
  for (std::int64_t i = -5; i <= 5; ++i) EXPECT_EQ(fold(i, 1), 0) << i;
  for (std::int64_t i = -300; i <= 300; ++i) {
    for (std::int64_t n : {1, 2, 3, 7}) {
      EXPECT_EQ(fold(i, n), ReferenceIndex(i, n, SeparableBorder::kReflect)) << i << " " << n;
      EXPECT_EQ(SeparableFold<std::int64_t>(i, n, SeparableBorder::kReplicate),
                std::min<std::int64_t>(std::max<std::int64_t>(i, 0), n - 1));
      EXPECT_EQ(SeparableFold<std::int64_t>(i, n, SeparableBorder::kZeros),
                i >= 0 && i < n ? i : -1);
    }
  }
}

// The operation sequence written out plainly, independent of the functor: per output, a row pass
// of std::fma in tap order from +0 for each row of tmp it reads (rounded to T), then a column pass
// of std::fma in tap order from +0; uint8 clamped to [0, 255] (NaN to 0) and rounded half to even,
// 16-bit floats rounded to nearest even (ReferenceRounding).
template <class In, class T>
In PlainChain(const std::vector<In>& x, const SeparableShape& s, const std::vector<T>& taps,
              std::int64_t b, std::int64_t c, std::int64_t yy, std::int64_t xx) {
  const T* row = taps.data() + (s.per_image_taps ? b * (s.kw + s.kh) : 0);
  const T* col = row + s.kw;
  auto at = [&](std::int64_t r, std::int64_t q) {
    return s.layout == SeparableLayout::kPlanes
               ? ((b * s.channels + c) * s.height + r) * s.width + q
               : ((b * s.height + r) * s.width + q) * s.channels + c;
  };
  T acc = 0;
  for (std::int64_t i = 0; i < s.kh; ++i) {
    const std::int64_t r = ReferenceIndex(yy + i - (s.kh - 1) / 2, s.height, s.border);
    T tmp = 0;
    for (std::int64_t j = 0; r >= 0 && j < s.kw; ++j) {
      const std::int64_t q = ReferenceIndex(xx + j - (s.kw - 1) / 2, s.width, s.border);
      tmp = std::fma(q < 0 ? T(0) : ToCompute<T>(x[at(r, q)]), row[j], tmp);
    }
    acc = std::fma(tmp, col[i], acc);
  }
  if constexpr (kSixteenBitFloat<In>) {
    return FromBits<In>(ReferenceRounding<In>(acc));
  } else if constexpr (sizeof(In) == 1) {
    if (!(acc >= 0)) return 0;  // negative or NaN
    return static_cast<In>(std::nearbyint(std::min<T>(acc, 255)));
  } else {
    return acc;
  }
}

template <class In>
void ExpectPlainChain(Isa isa, const SeparableShape& s, std::uint64_t seed) {
  using T = ComputeTypeOf<In>;
  std::mt19937_64 rng(seed);
  std::vector<In> x;
  std::vector<T> taps;
  if constexpr (kSixteenBitFloat<In>) {
    SixteenBitData(rng, s, 0, &x, &taps);
  } else {
    RandomData(rng, s, &x, &taps);
  }
  if constexpr (sizeof(In) == 1) {
    // Taps of 0.5 and 1.5 make many outputs exact halves: the ties round to even.
    for (std::size_t i = 0; i < taps.size(); i += 3) taps[i] = i % 2 ? 0.5f : 1.5f;
  }
  const std::vector<In> y = RunCpu(x, s, taps, isa);
  for (std::int64_t b = 0; b < s.images; ++b) {
    for (std::int64_t c = 0; c < s.channels; ++c) {
      for (std::int64_t yy = 0; yy < s.height; ++yy) {
        for (std::int64_t xx = 0; xx < s.width; ++xx) {
          const In expected = PlainChain(x, s, taps, b, c, yy, xx);
          const std::int64_t i = SeparableOffset(s, b, c, yy, xx);
          ASSERT_EQ(std::memcmp(&y[i], &expected, sizeof(In)), 0)
              << Describe(s) << ", " << cpu::IsaName(isa) << " at b " << b << " c " << c << " y "
              << yy << " x " << xx << ": " << Printable(y[i]) << " vs " << Printable(expected);
        }
      }
    }
  }
}

// Awkward widths (a tile and a vector plus or minus one, odd channel counts), every border and
// layout, against the plain chain bit for bit.
TEST_P(SeparableCpu, BitwiseEqualToAPlainFmaChain) {
  std::uint64_t seed = 500;
  for (std::int64_t width : {1, 2, 15, 17, 63, 65, 127, 129, 300}) {
    for (std::int64_t channels : {1, 3, 5}) {
      for (auto layout : {SeparableLayout::kPlanes, SeparableLayout::kChannelsLast}) {
        for (auto border :
             {SeparableBorder::kZeros, SeparableBorder::kReflect, SeparableBorder::kReplicate}) {
          SeparableShape s;
          s.images = 2;
          s.channels = channels;
          s.height = 1 + static_cast<std::int64_t>(seed % 23);
          s.width = width;
          s.kh = 1 + static_cast<std::int64_t>(seed % 9);
          s.kw = 1 + static_cast<std::int64_t>(seed % 11);
          s.layout = layout;
          s.border = border;
          s.per_image_taps = seed % 2 == 0;
          ExpectPlainChain<float>(GetParam(), s, seed++);
          ExpectPlainChain<double>(GetParam(), s, seed++);
          ExpectPlainChain<std::uint8_t>(GetParam(), s, seed++);
          ExpectPlainChain<Float16>(GetParam(), s, seed++);
          ExpectPlainChain<BFloat16>(GetParam(), s, seed++);
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST(SeparableUint8, RoundsHalfToEvenAndClamps) {
  SeparableShape s;
  s.images = 1;
  s.height = 1;
  s.width = 8;
  const std::vector<std::uint8_t> x = {1, 3, 5, 7, 200, 255, 0, 9};
  auto run = [&](float row_tap, float col_tap) {
    std::vector<std::uint8_t> y(8);
    const std::vector<float> taps = {row_tap, col_tap};
    SeparableFilterCpuRange(x.data(), y.data(), s, taps.data(), 0, SeparableFilterCpuUnits(s));
    return y;
  };
  // 0.5, 1.5, 2.5, 3.5, 100, 127.5, 0, 4.5: half to even.
  EXPECT_EQ(run(0.5f, 1.0f), (std::vector<std::uint8_t>{0, 2, 2, 4, 100, 128, 0, 4}));
  EXPECT_EQ(run(2.0f, 1.0f), (std::vector<std::uint8_t>{2, 6, 10, 14, 255, 255, 0, 18}));
  EXPECT_EQ(run(-1.0f, 1.0f), (std::vector<std::uint8_t>(8, 0)));
  EXPECT_EQ(run(std::numeric_limits<float>::quiet_NaN(), 1.0f), (std::vector<std::uint8_t>(8, 0)));
  EXPECT_EQ(run(std::numeric_limits<float>::infinity(), 1.0f),
            (std::vector<std::uint8_t>{255, 255, 255, 255, 255, 255, 0, 255}));
  for (int v = 0; v < 256; ++v) {  // every half-integer below 256, and the integers
    EXPECT_EQ(FromCompute<std::uint8_t>(v + 0.5f),
              static_cast<std::uint8_t>(std::min(255.0f, std::nearbyint(v + 0.5f))));
    EXPECT_EQ(FromCompute<std::uint8_t>(static_cast<float>(v)), v);
  }
}

TEST(SeparableShapeCheck, RejectsBadSizesAndTables) {
  SeparableShape s;
  s.images = 2;
  s.channels = 3;
  s.height = 4;
  s.width = 5;
  s.kh = 3;
  s.kw = 129;
  EXPECT_TRUE(CheckSeparableArguments(s, 132).ok());
  EXPECT_FALSE(CheckSeparableArguments(s, 131).ok());
  s.per_image_taps = true;
  EXPECT_TRUE(CheckSeparableArguments(s, 264).ok());
  // Any length along either axis, up to tables of 2^20 entries each.
  s.kw = kMaxTableEntries;
  s.per_image_taps = false;
  EXPECT_TRUE(CheckSeparableArguments(s, kMaxTableEntries + 3).ok());
  s.kw = kMaxTableEntries + 1;
  EXPECT_FALSE(CheckSeparableArguments(s, kMaxTableEntries + 4).ok());
  s.per_image_taps = true;
  s.kw = 0;
  EXPECT_FALSE(CheckSeparableArguments(s, 6).ok());
  s.kw = 3;
  s.images = 340000;  // 1,020,000 entries a table
  EXPECT_TRUE(CheckSeparableArguments(s, 2040000).ok());
  s.images = 360000;  // 1,080,000 entries a table
  EXPECT_FALSE(CheckSeparableArguments(s, 2160000).ok());
  s.images = -1;
  EXPECT_FALSE(CheckSeparableArguments(s, 0).ok());
  s.images = 0;  // empty: valid, nothing to do
  s.per_image_taps = false;
  EXPECT_TRUE(CheckSeparableArguments(s, 6).ok());
  EXPECT_EQ(SeparableFilterCpuUnits(s), 0);
}

// The op's two tables, shared or per image, give what the kernel gives their joined table; each
// table's size is checked under its own name.
TEST(SeparableFilterOp, TwoTablesFilterAsTheirJoinedTable) {
  using Op = SeparableFilterOp;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  const Dims x_dims{3, 2, 7, 9};  // B = 3 images of 2 channels, NCHW
  std::vector<float> x(3 * 2 * 7 * 9);
  for (float& v : x) v = value(rng);
  for (const char* taps : {"shared", "per_image"}) {
    const bool per_image = std::string(taps) == "per_image";
    const std::int64_t blocks = per_image ? 3 : 1, kw = 5, kh = 2;
    std::vector<float> row(blocks * kw), column(blocks * kh);
    for (float& v : row) v = value(rng);
    for (float& v : column) v = value(rng);
    AttrValue attrs[3];
    attrs[0].choice = taps;
    attrs[1].choice = "reflect";
    attrs[2].choice = "channels_first";
    Op::Params params;
    ASSERT_TRUE(ReadParams<Op>(attrs, DataType::kFloat32, &params).ok());
    Tables<float> tables;
    tables.Set(0, TableView<float>{row.data(), blocks * kw, SourceKind::kPageableHost});
    tables.Set(1, TableView<float>{column.data(), blocks * kh, SourceKind::kPageableHost});
    Op::Shape shape;
    Dims y_dims;
    ASSERT_TRUE(OutputOf<Op>(x_dims, params, tables.Sizes(), &shape, &y_dims).ok());
    EXPECT_EQ(shape.kw, kw);
    EXPECT_EQ(shape.kh, kh);
    EXPECT_EQ(shape.per_image_taps, per_image);
    std::vector<float> y(x.size()), expected(x.size());
    RunCpuOf<Op>(params, shape, x.data(), y.data(), tables, SerialShard{});
    const std::vector<float> joined = JoinSeparableTaps(shape, row.data(), column.data());
    for (std::int64_t b = 0; b < blocks; ++b) {  // image b's row taps, then its column taps
      EXPECT_EQ(joined[b * (kw + kh)], row[b * kw]);
      EXPECT_EQ(joined[b * (kw + kh) + kw], column[b * kh]);
    }
    SeparableFilterCpuRange<float, float>(x.data(), expected.data(), shape, joined.data(), 0,
                                          SeparableFilterCpuUnits(shape));
    EXPECT_EQ(y, expected) << taps;
  }
  AttrValue attrs[3];
  attrs[0].choice = "per_image";
  attrs[1].choice = "zeros";
  attrs[2].choice = "channels_first";
  Op::Params params;
  ASSERT_TRUE(ReadParams<Op>(attrs, DataType::kFloat32, &params).ok());
  TableSizes sizes;
  sizes.count = 2;
  sizes.size[0] = 6;
  sizes.size[1] = 4;  // not 3 sets of column taps
  Op::Shape shape;
  Dims y_dims;
  EXPECT_EQ(OutputOf<Op>(x_dims, params, sizes, &shape, &y_dims).message(),
            "column_taps must have the same number of taps for each of the 3 images; got 4 "
            "entries");
  EXPECT_EQ(detail::CheckCallOf<Op>("float32", x_dims, sizes, attrs, &y_dims).message(),
            "column_taps must have the same number of taps for each of the 3 images; got 4 "
            "entries");
  sizes.size[1] = 0;
  EXPECT_EQ(detail::CheckCallOf<Op>("float32", x_dims, sizes, attrs, &y_dims).message(),
            "column_taps must have 1 to 1048576 entries; got 0");
}

// A unit's cost in multiply-adds stays a positive int64 for the longest filters of large images.
TEST(SeparableCpuCost, LongFiltersOfLargeImagesStayInRange) {
  SeparableShape s;
  s.images = 1;
  s.channels = 1;
  s.height = std::int64_t{1} << 20;
  s.width = std::int64_t{1} << 30;
  s.kh = kMaxTableEntries / 2;
  s.kw = kMaxTableEntries / 2;
  EXPECT_GT(SeparableFilterCpuUnitCost(s), 0);
  EXPECT_GT(SeparableFilterCpuUnits(s), 0);
}

}  // namespace
}  // namespace ops
}  // namespace constmem
