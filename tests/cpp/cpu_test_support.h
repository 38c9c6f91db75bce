// SPDX-License-Identifier: Apache-2.0
// What the CPU kernel tests share: the floating-point mode TensorFlow's CPU threads run under, and
// the special values every kernel must handle.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "constmem/cpu_float_mode.hpp"

namespace constmem {

using cpu::ScopedFlushDenormals;

template <class T>
std::vector<T> SpecialValues() {
  using L = std::numeric_limits<T>;
  T negative_nan = -L::quiet_NaN();
  T payload_nan;
  if constexpr (sizeof(T) == 4) {
    const std::uint32_t bits = 0x7fc01234u;
    std::memcpy(&payload_nan, &bits, sizeof(T));
  } else {
    const std::uint64_t bits = 0xfff8000000abcdefull;
    std::memcpy(&payload_nan, &bits, sizeof(T));
  }
  return {
      L::quiet_NaN(), negative_nan, payload_nan, L::infinity(), -L::infinity(),  T(0),
      T(-0.0),        L::max(),     L::lowest(), L::min(),      L::denorm_min(), -L::denorm_min(),
      L::min() / 4,   T(1),         T(-1)};
}

}  // namespace constmem
