// SPDX-License-Identifier: Apache-2.0
// What the CPU kernel tests share: the floating-point mode TensorFlow's CPU threads run under, and
// the special values every kernel must handle.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "constmem/cpu_isa.hpp"

#if CONSTMEM_CPU_X86
#include <xmmintrin.h>
#endif

namespace constmem {

// Sets (or clears) flush-to-zero and denormals-are-zero for the scope, as TensorFlow's CPU thread
// pool sets them.
class ScopedFlushDenormals {
 public:
  explicit ScopedFlushDenormals(bool flush) {
#if CONSTMEM_CPU_X86
    saved_ = _mm_getcsr();
    _mm_setcsr(flush ? (saved_ | 0x8040) : (saved_ & ~0x8040u));
#else
    (void)flush;
#endif
  }
  ~ScopedFlushDenormals() {
#if CONSTMEM_CPU_X86
    _mm_setcsr(saved_);
#endif
  }

 private:
  unsigned saved_ = 0;
};

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
