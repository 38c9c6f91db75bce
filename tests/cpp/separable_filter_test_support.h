// SPDX-License-Identifier: Apache-2.0
// SeparableFilter's test data and reference, shared by the GPU test and the emulated kernels' test:
// shapes, random images and taps, the CPU kernel's result.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

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
std::vector<In> RandomImages(std::mt19937_64& rng, std::int64_t n) {
  std::vector<In> x(n);
  if constexpr (sizeof(In) == 1) {
    for (auto& v : x) v = static_cast<In>(rng() % 256);
  } else {
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (auto& v : x) v = static_cast<In>(u(rng));
  }
  return x;
}

template <class In, class T = typename SeparableCompute<In>::type>
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
