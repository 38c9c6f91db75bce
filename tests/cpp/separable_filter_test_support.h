// SPDX-License-Identifier: Apache-2.0
// SeparableFilter's test data and reference, shared by the GPU test and the emulated kernels' test:
// shapes, random images and taps, the CPU kernel's result, comparisons that take any NaN for any
// NaN in 16-bit floats (a GPU's NaN is canonical, the CPU's keeps the operands' sign and payload).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "constmem/numeric.hpp"
#include "separable_filter/separable_filter_cpu.h"
#include "separable_filter/separable_filter_functor.h"

namespace constmem {
namespace ops {

inline std::string Describe(const SeparableShape& s) {
  static const char* kBorders[] = {"zeros", "reflect", "replicate"};
  return "[" + std::to_string(s.images) + ", " + std::to_string(s.channels) + ", " +
         std::to_string(s.height) + ", " + std::to_string(s.width) + "] " +
         (s.layout == SeparableLayout::kPlanes ? "planes" : "channels-last") + ", kh " +
         std::to_string(s.kh) + ", kw " + std::to_string(s.kw) + ", " +
         kBorders[static_cast<int>(s.border)] + (s.per_image_taps ? ", per image" : ", shared");
}

inline SeparableShape MakeShape(std::int64_t b, std::int64_t c, std::int64_t h, std::int64_t w,
                                std::int64_t kh, std::int64_t kw, SeparableLayout layout,
                                SeparableBorder border, bool per_image) {
  SeparableShape s;
  s.images = b;
  s.channels = c;
  s.height = h;
  s.width = w;
  s.kh = kh;
  s.kw = kw;
  s.layout = layout;
  s.border = border;
  s.per_image_taps = per_image;
  return s;
}

template <class In>
constexpr bool kSixteenBitFloat =
    std::is_same<In, Float16>::value || std::is_same<In, BFloat16>::value;

template <class In>
In FromBits(std::uint16_t bits) {
  return In{bits};
}

// The special values of a 16-bit float type: NaNs of either sign (one signalling, with a payload),
// infinities, the smallest and largest subnormals, the smallest normal, and the largest finite
// values (a filter's sums of them overflow).
template <class In>
std::vector<In> SpecialValues() {
  const std::vector<std::uint16_t> bits =
      std::is_same<In, Float16>::value
          ? std::vector<std::uint16_t>{0x7e00, 0xfe00, 0x7d01, 0x7c00, 0xfc00,
                                       0x0001, 0x83ff, 0x0400, 0x7bff, 0xfbff}
          : std::vector<std::uint16_t>{0x7fc0, 0xffc0, 0x7f81, 0x7f80, 0xff80,
                                       0x0001, 0x807f, 0x0080, 0x7f7f, 0xff7f};
  std::vector<In> values;
  for (std::uint16_t b : bits) values.push_back(FromBits<In>(b));
  return values;
}

template <class In>
bool IsNaN(const In& v) {
  if constexpr (kSixteenBitFloat<In>) {
    const float f = ToCompute<float>(v);
    return f != f;
  } else {
    return v != v;
  }
}

// a and b are the same bits, or both NaN in a 16-bit float type.
template <class In>
bool SameResult(const In& a, const In& b) {
  if (std::memcmp(&a, &b, sizeof(In)) == 0) return true;
  if constexpr (kSixteenBitFloat<In>) return IsNaN(a) && IsNaN(b);
  return false;
}

// An element as a message shows it: 16-bit floats as their value and bits.
template <class In>
std::string Printable(const In& v) {
  if constexpr (kSixteenBitFloat<In>) {
    char bits[16];
    std::snprintf(bits, sizeof(bits), " (0x%04x)", static_cast<unsigned>(v.bits));
    return std::to_string(ToCompute<float>(v)) + bits;
  } else {
    return std::to_string(+v);
  }
}

// Random images: uint8 anywhere in [0, 255], the others uniform in [-1, 1] (rounded to the type);
// 16-bit floats with `special` of them (a share) SpecialValues.
template <class In>
std::vector<In> RandomImages(std::mt19937_64& rng, std::int64_t n, double special = 0) {
  std::vector<In> x(n);
  if constexpr (sizeof(In) == 1) {
    for (auto& v : x) v = static_cast<In>(rng() % 256);
  } else if constexpr (kSixteenBitFloat<In>) {
    const std::vector<In> specials = SpecialValues<In>();
    std::uniform_real_distribution<double> u(-1.0, 1.0), share(0.0, 1.0);
    for (auto& v : x) {
      v = share(rng) < special ? specials[rng() % specials.size()]
                               : FromCompute<In>(static_cast<float>(u(rng)));
    }
  } else {
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (auto& v : x) v = static_cast<In>(u(rng));
  }
  return x;
}

template <class In, class T = ComputeTypeOf<In>>
std::vector<T> RandomTaps(std::mt19937_64& rng, const SeparableShape& s) {
  std::vector<T> taps(s.TableSize());
  // For uint8 a smoothing kernel with some negative taps: results anywhere in [0, 255], some
  // clamped.
  std::uniform_real_distribution<double> u(sizeof(In) == 1 ? -0.3 : -1.0, 1.0);
  for (auto& v : taps)
    v = static_cast<T>(u(rng) / (sizeof(In) == 1 ? 0.35 * (s.kw + s.kh) / 2 : 1));
  return taps;
}

template <class In, class T>
std::vector<In> OnCpu(const std::vector<In>& x, const SeparableShape& s,
                      const std::vector<T>& taps) {
  std::vector<In> y(x.size());
  SeparableFilterCpuRange(x.data(), y.data(), s, taps.data(), 0, SeparableFilterCpuUnits(s));
  return y;
}

}  // namespace ops
}  // namespace constmem
