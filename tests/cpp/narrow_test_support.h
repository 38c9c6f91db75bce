// SPDX-License-Identifier: Apache-2.0
// What the tests of float16 and bfloat16 data share: the values every kernel must handle, and the
// comparison of 16-bit results (a NaN's payload is not part of the contract, as for float32).
// Plain C++.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "constmem/numeric.hpp"

namespace constmem {

template <class H>
constexpr const char* NarrowName() {
  return std::is_same<H, Float16>::value ? "float16" : "bfloat16";
}

template <class H>
bool IsNarrowNan(H v) {
  const unsigned magnitude = v.bits & 0x7fffu;
  return std::is_same<H, Float16>::value ? magnitude > 0x7c00u : magnitude > 0x7f80u;
}

// NaN, infinities, signed zeros, the largest finite values, the smallest normal and subnormal
// magnitudes, and ones, as bits.
template <class H>
std::vector<H> NarrowSpecialValues() {
  if constexpr (std::is_same<H, Float16>::value) {
    return {{0x7e00}, {0xfe00}, {0x7e5a}, {0x7c01}, {0x7c00}, {0xfc00},
            {0x0000}, {0x8000}, {0x7bff}, {0xfbff}, {0x0400}, {0x0001},
            {0x8001}, {0x0100}, {0x03ff}, {0x3c00}, {0xbc00}};
  } else {
    return {{0x7fc0}, {0xffc0}, {0x7fc5}, {0x7f81}, {0x7f80}, {0xff80},
            {0x0000}, {0x8000}, {0x7f7f}, {0xff7f}, {0x0080}, {0x0001},
            {0x8001}, {0x0040}, {0x007f}, {0x3f80}, {0xbf80}};
  }
}

template <class H>
std::vector<H> ToNarrow(const std::vector<float>& values) {
  std::vector<H> narrow(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) narrow[i] = FromCompute<H>(values[i]);
  return narrow;
}

template <class H>
std::vector<float> ToFloat(const std::vector<H>& values) {
  std::vector<float> wide(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) wide[i] = ToCompute<float>(values[i]);
  return wide;
}

// The index of the first element where a and b differ other than as two NaNs, or -1.
template <class H>
std::int64_t FirstNarrowDifference(const std::vector<H>& a, const std::vector<H>& b) {
  if (a.size() != b.size()) return 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (IsNarrowNan(a[i]) && IsNarrowNan(b[i])) continue;
    if (a[i].bits != b[i].bits) return static_cast<std::int64_t>(i);
  }
  return -1;
}

}  // namespace constmem
