// SPDX-License-Identifier: Apache-2.0
// Upfirdn's CPU kernel against an independent direct reference (zero insertion, full convolution,
// decimation, in long double) for many (n, k, up, down), every edge case included, up to 2^20 taps
// and rates up to 2^31 - 1; exactly on small integers, within the FMA chain's error bound on random
// data. Every instruction set this CPU
// supports is bitwise equal to the scalar definition (UpfirdnOutput) and so to the portable kernel,
// on random ranges of work units and on special values, with and without the denormal flush. The
// output length is scipy's _output_len (the table below, from tests/cpp/upfirdn_scipy_check.py).
#include "upfirdn/upfirdn_cpu.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "constmem/cpu_isa.hpp"
#include "cpu_test_support.h"
#include "narrow_test_support.h"
#include "upfirdn/upfirdn_functor.h"

namespace constmem {
namespace ops {
namespace {

using cpu::Isa;

struct LengthCase {
  std::int64_t n, k, up, down, scipy;
};

// {n, k, up, down, scipy.signal._upfirdn._output_len(k, n, up, down)} (scipy 1.17.1).
const LengthCase kScipyLengths[] = {
    {0, 1, 1, 1, 0},          {0, 1, 2, 2, 0},        {0, 1, 1, 3, 0},
    {0, 1, 3, 1, -2},         {0, 1, 2, 1, -1},       {0, 1, 1, 2, 0},
    {0, 1, 3, 2, -1},         {0, 1, 2, 3, 0},        {0, 1, 5, 4, -1},
    {0, 1, 7, 11, 0},         {0, 1, 160, 147, -1},   {0, 1, 147, 160, 0},
    {0, 1, 1024, 1, -1023},   {0, 1, 1, 1024, 0},     {0, 1, 1024, 1023, -1},
    {0, 3, 1, 1, 2},          {0, 3, 2, 2, 1},        {0, 3, 1, 3, 1},
    {0, 3, 3, 1, 0},          {0, 3, 2, 1, 1},        {0, 3, 1, 2, 1},
    {0, 3, 3, 2, 0},          {0, 3, 2, 3, 1},        {0, 3, 5, 4, 0},
    {0, 3, 7, 11, 0},         {0, 3, 160, 147, -1},   {0, 3, 147, 160, 0},
    {0, 3, 1024, 1, -1021},   {0, 3, 1, 1024, 1},     {0, 3, 1024, 1023, 0},
    {0, 8, 1, 1, 7},          {0, 8, 2, 2, 3},        {0, 8, 1, 3, 3},
    {0, 8, 3, 1, 5},          {0, 8, 2, 1, 6},        {0, 8, 1, 2, 4},
    {0, 8, 3, 2, 3},          {0, 8, 2, 3, 2},        {0, 8, 5, 4, 1},
    {0, 8, 7, 11, 1},         {0, 8, 160, 147, -1},   {0, 8, 147, 160, 0},
    {0, 8, 1024, 1, -1016},   {0, 8, 1, 1024, 1},     {0, 8, 1024, 1023, 0},
    {0, 61, 1, 1, 60},        {0, 61, 2, 2, 30},      {0, 61, 1, 3, 20},
    {0, 61, 3, 1, 58},        {0, 61, 2, 1, 59},      {0, 61, 1, 2, 30},
    {0, 61, 3, 2, 29},        {0, 61, 2, 3, 20},      {0, 61, 5, 4, 14},
    {0, 61, 7, 11, 5},        {0, 61, 160, 147, 0},   {0, 61, 147, 160, 0},
    {0, 61, 1024, 1, -963},   {0, 61, 1, 1024, 1},    {0, 61, 1024, 1023, 0},
    {1, 1, 1, 1, 1},          {1, 1, 2, 2, 1},        {1, 1, 1, 3, 1},
    {1, 1, 3, 1, 1},          {1, 1, 2, 1, 1},        {1, 1, 1, 2, 1},
    {1, 1, 3, 2, 1},          {1, 1, 2, 3, 1},        {1, 1, 5, 4, 1},
    {1, 1, 7, 11, 1},         {1, 1, 160, 147, 1},    {1, 1, 147, 160, 1},
    {1, 1, 1024, 1, 1},       {1, 1, 1, 1024, 1},     {1, 1, 1024, 1023, 1},
    {1, 3, 1, 1, 3},          {1, 3, 2, 2, 2},        {1, 3, 1, 3, 1},
    {1, 3, 3, 1, 3},          {1, 3, 2, 1, 3},        {1, 3, 1, 2, 2},
    {1, 3, 3, 2, 2},          {1, 3, 2, 3, 1},        {1, 3, 5, 4, 1},
    {1, 3, 7, 11, 1},         {1, 3, 160, 147, 1},    {1, 3, 147, 160, 1},
    {1, 3, 1024, 1, 3},       {1, 3, 1, 1024, 1},     {1, 3, 1024, 1023, 1},
    {1, 8, 1, 1, 8},          {1, 8, 2, 2, 4},        {1, 8, 1, 3, 3},
    {1, 8, 3, 1, 8},          {1, 8, 2, 1, 8},        {1, 8, 1, 2, 4},
    {1, 8, 3, 2, 4},          {1, 8, 2, 3, 3},        {1, 8, 5, 4, 2},
    {1, 8, 7, 11, 1},         {1, 8, 160, 147, 1},    {1, 8, 147, 160, 1},
    {1, 8, 1024, 1, 8},       {1, 8, 1, 1024, 1},     {1, 8, 1024, 1023, 1},
    {1, 61, 1, 1, 61},        {1, 61, 2, 2, 31},      {1, 61, 1, 3, 21},
    {1, 61, 3, 1, 61},        {1, 61, 2, 1, 61},      {1, 61, 1, 2, 31},
    {1, 61, 3, 2, 31},        {1, 61, 2, 3, 21},      {1, 61, 5, 4, 16},
    {1, 61, 7, 11, 6},        {1, 61, 160, 147, 1},   {1, 61, 147, 160, 1},
    {1, 61, 1024, 1, 61},     {1, 61, 1, 1024, 1},    {1, 61, 1024, 1023, 1},
    {3, 1, 1, 1, 3},          {3, 1, 2, 2, 3},        {3, 1, 1, 3, 1},
    {3, 1, 3, 1, 7},          {3, 1, 2, 1, 5},        {3, 1, 1, 2, 2},
    {3, 1, 3, 2, 4},          {3, 1, 2, 3, 2},        {3, 1, 5, 4, 3},
    {3, 1, 7, 11, 2},         {3, 1, 160, 147, 3},    {3, 1, 147, 160, 2},
    {3, 1, 1024, 1, 2049},    {3, 1, 1, 1024, 1},     {3, 1, 1024, 1023, 3},
    {3, 3, 1, 1, 5},          {3, 3, 2, 2, 4},        {3, 3, 1, 3, 2},
    {3, 3, 3, 1, 9},          {3, 3, 2, 1, 7},        {3, 3, 1, 2, 3},
    {3, 3, 3, 2, 5},          {3, 3, 2, 3, 3},        {3, 3, 5, 4, 4},
    {3, 3, 7, 11, 2},         {3, 3, 160, 147, 3},    {3, 3, 147, 160, 2},
    {3, 3, 1024, 1, 2051},    {3, 3, 1, 1024, 1},     {3, 3, 1024, 1023, 3},
    {3, 8, 1, 1, 10},         {3, 8, 2, 2, 6},        {3, 8, 1, 3, 4},
    {3, 8, 3, 1, 14},         {3, 8, 2, 1, 12},       {3, 8, 1, 2, 5},
    {3, 8, 3, 2, 7},          {3, 8, 2, 3, 4},        {3, 8, 5, 4, 5},
    {3, 8, 7, 11, 2},         {3, 8, 160, 147, 3},    {3, 8, 147, 160, 2},
    {3, 8, 1024, 1, 2056},    {3, 8, 1, 1024, 1},     {3, 8, 1024, 1023, 3},
    {3, 61, 1, 1, 63},        {3, 61, 2, 2, 33},      {3, 61, 1, 3, 21},
    {3, 61, 3, 1, 67},        {3, 61, 2, 1, 65},      {3, 61, 1, 2, 32},
    {3, 61, 3, 2, 34},        {3, 61, 2, 3, 22},      {3, 61, 5, 4, 18},
    {3, 61, 7, 11, 7},        {3, 61, 160, 147, 3},   {3, 61, 147, 160, 3},
    {3, 61, 1024, 1, 2109},   {3, 61, 1, 1024, 1},    {3, 61, 1024, 1023, 3},
    {31, 1, 1, 1, 31},        {31, 1, 2, 2, 31},      {31, 1, 1, 3, 11},
    {31, 1, 3, 1, 91},        {31, 1, 2, 1, 61},      {31, 1, 1, 2, 16},
    {31, 1, 3, 2, 46},        {31, 1, 2, 3, 21},      {31, 1, 5, 4, 38},
    {31, 1, 7, 11, 20},       {31, 1, 160, 147, 33},  {31, 1, 147, 160, 28},
    {31, 1, 1024, 1, 30721},  {31, 1, 1, 1024, 1},    {31, 1, 1024, 1023, 31},
    {31, 3, 1, 1, 33},        {31, 3, 2, 2, 32},      {31, 3, 1, 3, 11},
    {31, 3, 3, 1, 93},        {31, 3, 2, 1, 63},      {31, 3, 1, 2, 17},
    {31, 3, 3, 2, 47},        {31, 3, 2, 3, 21},      {31, 3, 5, 4, 39},
    {31, 3, 7, 11, 20},       {31, 3, 160, 147, 33},  {31, 3, 147, 160, 28},
    {31, 3, 1024, 1, 30723},  {31, 3, 1, 1024, 1},    {31, 3, 1024, 1023, 31},
    {31, 8, 1, 1, 38},        {31, 8, 2, 2, 34},      {31, 8, 1, 3, 13},
    {31, 8, 3, 1, 98},        {31, 8, 2, 1, 68},      {31, 8, 1, 2, 19},
    {31, 8, 3, 2, 49},        {31, 8, 2, 3, 23},      {31, 8, 5, 4, 40},
    {31, 8, 7, 11, 20},       {31, 8, 160, 147, 33},  {31, 8, 147, 160, 28},
    {31, 8, 1024, 1, 30728},  {31, 8, 1, 1024, 1},    {31, 8, 1024, 1023, 31},
    {31, 61, 1, 1, 91},       {31, 61, 2, 2, 61},     {31, 61, 1, 3, 31},
    {31, 61, 3, 1, 151},      {31, 61, 2, 1, 121},    {31, 61, 1, 2, 46},
    {31, 61, 3, 2, 76},       {31, 61, 2, 3, 41},     {31, 61, 5, 4, 53},
    {31, 61, 7, 11, 25},      {31, 61, 160, 147, 34}, {31, 61, 147, 160, 28},
    {31, 61, 1024, 1, 30781}, {31, 61, 1, 1024, 1},   {31, 61, 1024, 1023, 31},
};

TEST(UpfirdnShape, OutputLengthIsScipys) {
  for (const LengthCase& c : kScipyLengths) {
    EXPECT_EQ(UpfirdnOutputLength(c.n, c.k, c.up, c.down), c.scipy)
        << "n=" << c.n << " k=" << c.k << " up=" << c.up << " down=" << c.down;
    UpfirdnShape shape;
    const Status status = MakeUpfirdnShape(3, c.n, c.k, c.up, c.down, &shape);
    // Where scipy raises (a negative length), so does the shape.
    EXPECT_EQ(status.ok(), c.scipy >= 0) << status.ToString();
    if (status.ok()) {
      EXPECT_EQ(shape.outputs, c.scipy);
    }
  }
  // The ceiling of ((n - 1) * up + k) / down for n >= 1, small and up to the limits.
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 20000; ++trial) {
    const bool large = trial % 2 == 1;
    const std::int64_t n = 1 + rng() % 100000;
    const std::int64_t k = 1 + rng() % (large ? kUpfirdnMaxTaps : 4096);
    const std::int64_t up = 1 + rng() % (large ? kUpfirdnMaxRate : 1024);
    const std::int64_t down = 1 + rng() % (large ? kUpfirdnMaxRate : 1024);
    const std::int64_t full = (n - 1) * up + k;
    EXPECT_EQ(UpfirdnOutputLength(n, k, up, down), (full + down - 1) / down);
  }
  // Rows of no sample at the largest rates: scipy's (k - 1 - up) // down + 1.
  EXPECT_EQ(UpfirdnOutputLength(0, 1, kUpfirdnMaxRate, 1), -kUpfirdnMaxRate + 1);
  EXPECT_EQ(UpfirdnOutputLength(0, kUpfirdnMaxTaps, kUpfirdnMaxRate, kUpfirdnMaxRate), 0);
  EXPECT_EQ(UpfirdnOutputLength(0, kUpfirdnMaxTaps, 5, kUpfirdnMaxRate), 1);
}

TEST(UpfirdnShape, RejectsWhatIsOutsideTheLimits) {
  // 1 to 2^20 taps (the core's limit for every table), up and down 1 to 2^31 - 1.
  static_assert(kUpfirdnMaxTaps == std::int64_t{1} << 20, "taps: 1 to 2^20");
  static_assert(kUpfirdnMaxTaps == kMaxTableEntries, "the core's table limit");
  static_assert(kUpfirdnMaxRate == 2147483647, "rates: 1 to 2^31 - 1");
  UpfirdnShape shape;
  EXPECT_TRUE(
      MakeUpfirdnShape(2, 10, kUpfirdnMaxTaps, kUpfirdnMaxRate, kUpfirdnMaxRate, &shape).ok());
  EXPECT_EQ(shape.outputs, 10 + (kUpfirdnMaxTaps - 1) / kUpfirdnMaxRate);
  ASSERT_TRUE(MakeUpfirdnShape(3, 1000, 5000, 1, kUpfirdnMaxRate, &shape).ok());
  EXPECT_EQ(shape.outputs, 1);
  // 2^31 samples at up 2^31 - 1: 2^62 - 2^31 of the upsampled row, within 2^62; 2^31 + 2 not.
  ASSERT_TRUE(
      MakeUpfirdnShape(1, std::int64_t{1} << 31, 7, kUpfirdnMaxRate, kUpfirdnMaxRate, &shape).ok());
  EXPECT_EQ(shape.outputs, std::int64_t{1} << 31);
  EXPECT_FALSE(
      MakeUpfirdnShape(1, (std::int64_t{1} << 31) + 2, 7, kUpfirdnMaxRate, 1, &shape).ok());
  EXPECT_TRUE(MakeUpfirdnShape(0, 10, 1, 1, 1, &shape).ok());
  EXPECT_EQ(shape.outputs, 10);
  EXPECT_FALSE(MakeUpfirdnShape(2, 10, 0, 1, 1, &shape).ok());
  EXPECT_FALSE(MakeUpfirdnShape(2, 10, kUpfirdnMaxTaps + 1, 1, 1, &shape).ok());
  EXPECT_FALSE(MakeUpfirdnShape(2, 10, 3, 0, 1, &shape).ok());
  EXPECT_FALSE(MakeUpfirdnShape(2, 10, 3, 1, 0, &shape).ok());
  EXPECT_FALSE(MakeUpfirdnShape(2, 10, 3, kUpfirdnMaxRate + 1, 1, &shape).ok());
  EXPECT_FALSE(MakeUpfirdnShape(2, 10, 3, 1, kUpfirdnMaxRate + 1, &shape).ok());
  EXPECT_FALSE(MakeUpfirdnShape(-1, 10, 3, 1, 1, &shape).ok());
  EXPECT_FALSE(MakeUpfirdnShape(2, -1, 3, 1, 1, &shape).ok());
  EXPECT_FALSE(MakeUpfirdnShape(4, kUpfirdnMaxElements / 2, 3, 1, 1, &shape).ok());
  EXPECT_FALSE(MakeUpfirdnShape(1, kUpfirdnMaxElements / 2, 3, 4, 1, &shape).ok());
  EXPECT_FALSE(MakeUpfirdnShape(1, 0, 1, 3, 1, &shape).ok());  // scipy's negative length
  ASSERT_TRUE(MakeUpfirdnShape(1, 0, 5, 2, 1, &shape).ok());   // scipy's three zeros
  EXPECT_EQ(shape.outputs, 3);
}

// The direct reference: the row with up - 1 zeros after each sample, the full convolution with h
// at the kept samples t = i * down, in long double, with the sum of the terms' magnitudes (for the
// error bound) and the number of terms that meet a sample.
struct Reference {
  std::vector<long double> y, magnitude;
  std::vector<std::int64_t> terms;
};

// xup[u] is x[u / up] where up divides u, else zero; it is not stored (up may be 2^31 - 1): the
// sum runs over the taps j, skipping the zeros, or over the samples s (u = s * up), whichever is
// shorter.
template <class T>
Reference Direct(const std::vector<T>& x, std::int64_t rows, std::int64_t n,
                 const std::vector<T>& h, std::int64_t up, std::int64_t down) {
  const auto k = static_cast<std::int64_t>(h.size());
  const std::int64_t outputs = UpfirdnOutputLength(n, k, up, down);
  Reference ref;
  ref.y.assign(rows * outputs, 0.0L);
  ref.magnitude.assign(rows * outputs, 0.0L);
  ref.terms.assign(rows * outputs, 0);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t i = 0; i < outputs; ++i) {
      const std::int64_t t = i * down;  // a sample of the full convolution, of length (n-1)up+k
      long double sum = 0, magnitude = 0;
      std::int64_t terms = 0;
      auto add = [&](std::int64_t j, std::int64_t s) {
        const long double term = static_cast<long double>(h[j]) * x[r * n + s];
        sum += term;
        magnitude += std::fabs(term);
        ++terms;
      };
      if (k <= n) {
        for (std::int64_t j = 0; j < k; ++j) {
          const std::int64_t u = t - j;
          if (u >= 0 && u < n * up && u % up == 0) add(j, u / up);
        }
      } else {
        for (std::int64_t s = 0; s < n; ++s) {
          const std::int64_t j = t - s * up;
          if (j >= 0 && j < k) add(j, s);
        }
      }
      ref.y[r * outputs + i] = sum;
      ref.magnitude[r * outputs + i] = magnitude;
      ref.terms[r * outputs + i] = terms;
    }
  }
  return ref;
}

template <class T>
bool SameBits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// NaN payloads are not part of the contract: which of two NaN operands an fma returns depends on
// the instruction form the compiler picks (upfirdn_functor.h).
template <class T>
bool SameBitsOrBothNan(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return false;
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

// Every edge case and the rates of the GPU tests: up = down, 1/1 (full convolution), n = 1, k > n,
// k < up (phases without taps), empty rows, and the audio rates.
std::vector<Case> Cases() {
  std::vector<Case> cases = {
      {3, 50, 7, 1, 1},         {2, 40, 5, 3, 3},         {2, 1, 9, 1, 1},
      {2, 1, 9, 4, 3},          {3, 1, 1, 1, 1},          {1, 1, 1, 7, 2},
      {2, 10, 40, 1, 1},        {2, 10, 40, 3, 2},        {2, 30, 3, 8, 1},
      {2, 30, 3, 8, 3},         {2, 25, 2, 5, 7},         {3, 0, 9, 2, 1},
      {2, 0, 5, 1, 3},          {0, 10, 5, 2, 1},         {2, 500, 31, 1, 3},
      {2, 500, 31, 3, 1},       {2, 700, 255, 160, 147},  {2, 700, 255, 147, 160},
      {2, 600, 31, 2, 1},       {2, 600, 31, 1, 2},       {2, 600, 255, 3, 2},
      {2, 600, 255, 2, 3},      {1, 300, 4096, 1, 1},     {1, 300, 4096, 3, 1},
      {1, 2000, 4096, 1, 3},    {1, 50, 61, 1024, 1},     {1, 3000, 61, 1, 1024},
      {1, 40, 100, 1024, 1023}, {1, 500, 3201, 160, 147}, {40, 333, 17, 2, 1},
      {20, 257, 13, 1, 2},      {17, 129, 33, 3, 5},
  };
  return cases;
}

// Past 4,096 taps and rates of 1,024: long filters (2^20 taps), rates up to 2^31 - 1 (i * down and
// p + m * up past 2^32), Q past 1,024 (the vector kernel's streams) and past what a chunk
// rearranges (scalar), P past the outputs of a range (scalar), and the audio rates of resample's
// longest filters.
std::vector<Case> LargeCases() {
  constexpr std::int64_t kRate = kUpfirdnMaxRate;
  return {
      {1, 300, 100000, 1, 1},       {1, 50, kUpfirdnMaxTaps, 1000, 3}, {2, 40, 9, kRate, kRate - 1},
      {2, 40, 9, kRate - 1, kRate}, {1, 30, 70000, kRate, 65536},      {2, 7, 3, 3, kRate},
      {3, 500, 700, 1500, 1499},    {2, 30000, 5000, 1, 3000},         {1, 1100000, 3, 1, 65537},
      {2, 2000, 50000, 4099, 4097}, {2, 250, 31005, 2560, 147},        {2, 4000, 31005, 147, 2560},
      {2, 300, 96405, 2560, 147},   {2, 5000, 96405, 147, 2560},       {1, 20, 5000, 100000, 99999},
      {3, 100000, 40, 5, 1031},
  };
}

class UpfirdnCpu : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!cpu::IsaSupported(GetParam()))
      GTEST_SKIP() << "this CPU lacks " << cpu::IsaName(GetParam());
  }
};

template <class T>
std::vector<T> RunCpu(Isa isa, const std::vector<T>& x, const UpfirdnShape& shape,
                      const std::vector<T>& h, std::int64_t begin, std::int64_t end) {
  std::vector<T> y(shape.rows * shape.outputs, T(7));
  UpfirdnCpuRange(x.data(), y.data(), shape, h.data(), begin, end, isa);
  return y;
}

template <class T>
std::vector<T> Scalar(const std::vector<T>& x, const UpfirdnShape& shape, const std::vector<T>& h,
                      std::int64_t begin, std::int64_t end) {
  std::vector<T> y(shape.rows * shape.outputs, T(7));
  for (std::int64_t i = begin; i < end; ++i) {
    const std::int64_t row = i / shape.outputs;
    y[i] = UpfirdnOutput(x.data() + row * shape.length, shape, h.data(), i % shape.outputs);
  }
  return y;
}

// Small integers: every partial sum is exact, so the kernel equals the reference exactly.
template <class T>
void CheckIntegers(Isa isa, const Case& c, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> small(-8, 8);
  std::vector<T> x(c.rows * c.n), h(c.k);
  for (auto& v : x) v = static_cast<T>(small(rng));
  for (auto& v : h) v = static_cast<T>(small(rng));
  UpfirdnShape shape;
  ASSERT_TRUE(MakeUpfirdnShape(c.rows, c.n, c.k, c.up, c.down, &shape).ok()) << Describe(c);
  const auto y = RunCpu(isa, x, shape, h, 0, shape.rows * shape.outputs);
  const Reference ref = Direct(x, c.rows, c.n, h, c.up, c.down);
  ASSERT_EQ(y.size(), ref.y.size()) << Describe(c);
  for (std::size_t i = 0; i < y.size(); ++i) {
    ASSERT_EQ(static_cast<long double>(y[i]), ref.y[i]) << Describe(c) << ", output " << i;
  }
}

// Random reals: within the error bound of a chain of `terms` FMAs (each rounding at most half an
// ulp of the partial sum: terms * eps * sum of magnitudes), and bitwise equal to the definition.
template <class T>
void CheckReals(Isa isa, const Case& c, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<T> x(c.rows * c.n), h(c.k);
  for (auto& v : x) v = static_cast<T>(normal(rng));
  for (auto& v : h) v = static_cast<T>(normal(rng));
  UpfirdnShape shape;
  ASSERT_TRUE(MakeUpfirdnShape(c.rows, c.n, c.k, c.up, c.down, &shape).ok()) << Describe(c);
  const std::int64_t total = shape.rows * shape.outputs;
  const auto y = RunCpu(isa, x, shape, h, 0, total);
  ASSERT_TRUE(SameBits(y, Scalar(x, shape, h, 0, total)))
      << cpu::IsaName(isa) << ", " << Describe(c);
  const Reference ref = Direct(x, c.rows, c.n, h, c.up, c.down);
  const long double eps = std::numeric_limits<T>::epsilon();
  for (std::int64_t i = 0; i < total; ++i) {
    const long double bound = ref.terms[i] * eps * ref.magnitude[i] + std::numeric_limits<T>::min();
    ASSERT_LE(std::fabs(static_cast<long double>(y[i]) - ref.y[i]), bound)
        << Describe(c) << ", output " << i;
  }
  // Random ranges of work units: the rest of y untouched.
  for (int trial = 0; trial < 4 && total > 0; ++trial) {
    const std::int64_t begin = std::uniform_int_distribution<std::int64_t>(0, total)(rng);
    const std::int64_t end = std::uniform_int_distribution<std::int64_t>(begin, total)(rng);
    ASSERT_TRUE(SameBits(RunCpu(isa, x, shape, h, begin, end), Scalar(x, shape, h, begin, end)))
        << cpu::IsaName(isa) << ", " << Describe(c) << ", [" << begin << ", " << end << ")";
  }
}

TEST_P(UpfirdnCpu, IntegersEqualTheDirectReferenceExactly) {
  std::uint64_t seed = 1;
  for (const Case& c : Cases()) {
    CheckIntegers<float>(GetParam(), c, seed++);
    CheckIntegers<double>(GetParam(), c, seed++);
  }
}

TEST_P(UpfirdnCpu, RealsWithinTheErrorBoundAndBitwiseEqualToTheDefinition) {
  std::uint64_t seed = 1000;
  for (const Case& c : Cases()) {
    CheckReals<float>(GetParam(), c, seed++);
    CheckReals<double>(GetParam(), c, seed++);
  }
}

TEST_P(UpfirdnCpu, LargeTapsAndRatesEqualTheDirectReference) {
  std::uint64_t seed = 2000;
  for (const Case& c : LargeCases()) {
    CheckIntegers<float>(GetParam(), c, seed++);
    CheckReals<double>(GetParam(), c, seed++);
  }
}

// Random shapes and ranges, against the portable kernel and the definition.
template <class T>
void RandomShapes(Isa isa) {
  std::mt19937_64 rng(77 + static_cast<unsigned>(isa) + sizeof(T));
  std::normal_distribution<double> normal(0.0, 1.0);
  const std::int64_t rates[] = {1,
                                2,
                                3,
                                4,
                                5,
                                7,
                                8,
                                16,
                                147,
                                160,
                                1024,
                                1025,
                                2560,
                                4099,
                                65537,
                                300007,
                                1 << 20,
                                kUpfirdnMaxRate - 1,
                                kUpfirdnMaxRate};
  constexpr int kRates = sizeof(rates) / sizeof(rates[0]);
  for (int trial = 0; trial < 200; ++trial) {
    Case c;
    c.rows = 1 + rng() % 4;
    c.n = trial % 10 == 0 ? 3000 + rng() % 500 : rng() % 300;
    c.k = trial % 9 == 0 ? 1 + rng() % 4096 : trial % 25 == 1 ? 1 + rng() % 70000 : 1 + rng() % 70;
    c.up = trial % 3 == 0 ? rates[rng() % kRates] : 1 + rng() % 12;
    c.down = trial % 4 == 0 ? rates[rng() % kRates] : 1 + rng() % 12;
    UpfirdnShape shape;
    if (!MakeUpfirdnShape(c.rows, c.n, c.k, c.up, c.down, &shape).ok()) continue;
    if (shape.rows * shape.outputs > 4000000) continue;  // a large up over a small down
    std::vector<T> x(c.rows * c.n), h(c.k);
    for (auto& v : x) v = static_cast<T>(normal(rng));
    for (auto& v : h) v = static_cast<T>(normal(rng));
    const std::int64_t total = shape.rows * shape.outputs;
    const std::int64_t begin = std::uniform_int_distribution<std::int64_t>(0, total)(rng);
    const std::int64_t end = std::uniform_int_distribution<std::int64_t>(begin, total)(rng);
    const auto y = RunCpu(isa, x, shape, h, begin, end);
    ASSERT_TRUE(SameBits(y, RunCpu(Isa::kPortable, x, shape, h, begin, end)))
        << cpu::IsaName(isa) << ", " << Describe(c);
    ASSERT_TRUE(SameBits(y, Scalar(x, shape, h, begin, end)))
        << cpu::IsaName(isa) << ", " << Describe(c);
  }
}

TEST_P(UpfirdnCpu, RandomShapesBitwiseEqualToThePortableKernel) {
  RandomShapes<float>(GetParam());
  RandomShapes<double>(GetParam());
}

// NaN, infinities, signed zeros and subnormals among samples and taps, near the edges and inside.
template <class T>
void SpecialCases(Isa isa, bool flush) {
  ScopedFlushDenormals mode(flush);
  std::mt19937_64 rng(5 + sizeof(T));
  const auto specials = SpecialValues<T>();
  std::uniform_int_distribution<std::size_t> pick(0, specials.size() - 1);
  for (const Case& c : std::vector<Case>{{3, 300, 7, 1, 1},
                                         {3, 300, 7, 3, 2},
                                         {2, 400, 31, 2, 1},
                                         {2, 400, 31, 1, 3},
                                         {2, 300, 255, 160, 147}}) {
    std::vector<T> x(c.rows * c.n), h(c.k);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (auto& v : x) v = rng() % 8 == 0 ? specials[pick(rng)] : static_cast<T>(normal(rng));
    for (auto& v : h) v = rng() % 16 == 0 ? specials[pick(rng)] : static_cast<T>(normal(rng));
    UpfirdnShape shape;
    ASSERT_TRUE(MakeUpfirdnShape(c.rows, c.n, c.k, c.up, c.down, &shape).ok());
    const std::int64_t total = shape.rows * shape.outputs;
    ASSERT_TRUE(
        SameBitsOrBothNan(RunCpu(isa, x, shape, h, 0, total), Scalar(x, shape, h, 0, total)))
        << cpu::IsaName(isa) << ", " << Describe(c) << (flush ? ", flushed" : "");
  }
}

TEST_P(UpfirdnCpu, SpecialValuesWithAndWithoutDenormalFlush) {
  for (bool flush : {false, true}) {
    SpecialCases<float>(GetParam(), flush);
    SpecialCases<double>(GetParam(), flush);
  }
}

// float16 and bfloat16: outputs [begin, end) are the float kernel's on the samples converted to
// float, rounded to nearest even (FromCompute), and the rest of y is untouched. Samples are random
// or, with `specials`, special values one in eight (NaN, infinities, subnormal halves), the taps
// now and then NaN, infinite, subnormal or large enough that the outputs overflow 16 bits.
template <class H>
void CheckNarrow(Isa isa, const Case& c, std::uint64_t seed, bool specials) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const auto narrow_specials = NarrowSpecialValues<H>();
  const std::vector<float> tap_specials = {std::numeric_limits<float>::quiet_NaN(),
                                           std::numeric_limits<float>::infinity(),
                                           -0.0f,
                                           std::numeric_limits<float>::denorm_min(),
                                           1e5f,
                                           -3e38f};
  std::vector<H> x(c.rows * c.n);
  std::vector<float> h(c.k);
  for (auto& v : x) {
    v = specials && rng() % 8 == 0 ? narrow_specials[rng() % narrow_specials.size()]
                                   : FromCompute<H>(normal(rng));
  }
  for (auto& v : h) {
    v = specials && rng() % 16 == 0 ? tap_specials[rng() % tap_specials.size()] : normal(rng);
  }
  UpfirdnShape shape;
  ASSERT_TRUE(MakeUpfirdnShape(c.rows, c.n, c.k, c.up, c.down, &shape).ok()) << Describe(c);
  const std::int64_t total = shape.rows * shape.outputs;
  const std::vector<float> wide = ToFloat(x);
  std::vector<float> wide_y(total);
  UpfirdnCpuRange(wide.data(), wide_y.data(), shape, h.data(), 0, total, isa);
  const std::vector<H> expected = ToNarrow<H>(wide_y);
  for (int trial = 0; trial < 3; ++trial) {
    std::int64_t begin = 0, end = total;
    if (trial > 0 && total > 0) {
      begin = std::uniform_int_distribution<std::int64_t>(0, total)(rng);
      end = std::uniform_int_distribution<std::int64_t>(begin, total)(rng);
    }
    std::vector<H> y(total, H{0x1234});
    UpfirdnCpuRange(x.data(), y.data(), shape, h.data(), begin, end, isa);
    std::vector<H> want(total, H{0x1234});
    std::copy(expected.begin() + begin, expected.begin() + end, want.begin() + begin);
    const std::int64_t at = FirstNarrowDifference(y, want);
    ASSERT_EQ(at, -1) << NarrowName<H>() << ", " << cpu::IsaName(isa) << ", " << Describe(c)
                      << ", [" << begin << ", " << end << ")" << (specials ? ", specials" : "")
                      << ": 0x" << std::hex << (at >= 0 ? y[at].bits : 0) << " for 0x"
                      << (at >= 0 ? want[at].bits : 0);
  }
}

TEST_P(UpfirdnCpu, HalfPrecisionIsTheFloatKernelRoundedToNearestEven) {
  std::uint64_t seed = 3000;
  for (const Case& c : Cases()) {
    for (bool specials : {false, true}) {
      CheckNarrow<Float16>(GetParam(), c, seed++, specials);
      CheckNarrow<BFloat16>(GetParam(), c, seed++, specials);
    }
  }
}

TEST_P(UpfirdnCpu, HalfPrecisionOfLargeTapsAndRates) {
  std::uint64_t seed = 4000;
  // Rows longer than a chunk of the 16-bit path (64 Ki samples, 64 periods at least).
  std::vector<Case> cases = {{2, 150000, 31, 1, 1},   {1, 200000, 61, 3, 2},
                             {1, 150000, 255, 2, 3},  {1, 70000, 3201, 160, 147},
                             {1, 300000, 158, 1, 12}, {1, 100000, 5000, 1, 3000}};
  const auto large = LargeCases();
  cases.insert(cases.end(), large.begin(), large.end());
  for (const Case& c : cases) {
    CheckNarrow<Float16>(GetParam(), c, seed++, false);
    CheckNarrow<BFloat16>(GetParam(), c, seed++, true);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryInstructionSet, UpfirdnCpu,
                         ::testing::Values(Isa::kPortable, Isa::kAvx2, Isa::kAvx512),
                         [](const auto& info) { return std::string(cpu::IsaName(info.param)); });

// The instruction set chosen at run time (capped by CONSTMEM_CPU_ISA: the capped ctest variants
// run this) gives the portable kernel's bits.
TEST(UpfirdnCpuIsa, TheDefaultInstructionSetIsBitwiseEqualToThePortableKernel) {
  const char* cap = std::getenv("CONSTMEM_CPU_ISA");
  if (cap != nullptr && std::string(cap) == "portable") {
    EXPECT_EQ(cpu::BestIsaForShuffles(), Isa::kPortable);
  }
  if (cap != nullptr && std::string(cap) == "avx2") {
    EXPECT_NE(cpu::BestIsaForShuffles(), Isa::kAvx512);
  }
  std::mt19937_64 rng(41);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (const Case& c : Cases()) {
    UpfirdnShape shape;
    ASSERT_TRUE(MakeUpfirdnShape(c.rows, c.n, c.k, c.up, c.down, &shape).ok());
    std::vector<float> x(c.rows * c.n), h(c.k);
    for (auto& v : x) v = static_cast<float>(normal(rng));
    for (auto& v : h) v = static_cast<float>(normal(rng));
    const std::int64_t total = shape.rows * shape.outputs;
    std::vector<float> y(total, 7.0f);
    UpfirdnCpuRange(x.data(), y.data(), shape, h.data(), 0, total);
    EXPECT_TRUE(SameBits(y, RunCpu(Isa::kPortable, x, shape, h, 0, total)))
        << cpu::IsaName(cpu::BestIsaForShuffles()) << ", " << Describe(c);
  }
}

// Terms past the edge are skipped, not multiplied by zero: an infinite sample reaches only the
// outputs whose terms meet it, and phases without taps (k < up) give +0.
TEST(UpfirdnCpuDefinition, InfinitiesStayWithTheOutputsTheyMeetAndEmptyPhasesGiveZero) {
  const std::vector<float> x = {std::numeric_limits<float>::infinity(), 1.0f, 2.0f};
  const std::vector<float> h = {1.0f, 0.0f};  // phase 1 of up 4 has the zero tap: inf * 0
  UpfirdnShape shape;
  ASSERT_TRUE(MakeUpfirdnShape(1, 3, 2, 4, 1, &shape).ok());
  ASSERT_EQ(shape.outputs, 10);
  const auto y = RunCpu(Isa::kPortable, x, shape, h, 0, 10);
  EXPECT_TRUE(std::isinf(y[0]));
  EXPECT_TRUE(std::isnan(y[1]));  // inf * 0: a term that exists
  for (int i : {2, 3, 6, 7}) {    // phases 2 and 3: no taps
    EXPECT_EQ(y[i], 0.0f);
    EXPECT_FALSE(std::signbit(y[i]));
  }
  EXPECT_EQ(y[4], 1.0f);
  EXPECT_EQ(y[5], 0.0f);
  EXPECT_EQ(y[8], 2.0f);
}

// scipy.signal.upfirdn's outputs for x = 1..n, h = k taps (j + 1) * (1, -2, 1, -2, ...).
TEST(UpfirdnCpuDefinition, SmallCasesEqualScipy) {
  struct Small {
    std::int64_t n, k, up, down;
    std::vector<double> y;
  };
  const Small smalls[] = {
      {5, 3, 2, 3, {1, -8, 13, -20}},
      {4, 5, 3, 1, {1, -4, 3, -6, -3, 6, -13, -2, 9, -20, -1, 12, -32, 20}},
      {6, 2, 1, 2, {1, -5, -11, -24}},
      {3, 7, 5, 4, {1, 5, -16, 9, 21}},
  };
  for (const Small& s : smalls) {
    std::vector<double> x(s.n), h(s.k);
    for (std::int64_t i = 0; i < s.n; ++i) x[i] = static_cast<double>(i + 1);
    for (std::int64_t j = 0; j < s.k; ++j) h[j] = static_cast<double>(j + 1) * (j % 2 ? -2 : 1);
    UpfirdnShape shape;
    ASSERT_TRUE(MakeUpfirdnShape(1, s.n, s.k, s.up, s.down, &shape).ok());
    EXPECT_EQ(RunCpu(cpu::BestIsa(), x, shape, h, 0, shape.outputs), s.y)
        << "n=" << s.n << " k=" << s.k << " up=" << s.up << " down=" << s.down;
  }
}

}  // namespace
}  // namespace ops
}  // namespace constmem
