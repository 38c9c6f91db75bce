// SPDX-License-Identifier: Apache-2.0
// The floating-point mode TensorFlow's CPU threads run under: flush-to-zero and
// denormals-are-zero. A CPU kernel called from elsewhere (an XLA handler, a test) sets it for its
// scope to compute what it computes inside TensorFlow.
#pragma once

#include "constmem/cpu_isa.hpp"

#if CONSTMEM_CPU_X86
#include <xmmintrin.h>
#endif

// Private to each library that compiles it (visibility.hpp).
#pragma GCC visibility push(hidden)
namespace constmem {
namespace cpu {

// Sets (or clears) FTZ and DAZ for the scope; restores the caller's mode after. No-op off x86.
class ScopedFlushDenormals {
 public:
  explicit ScopedFlushDenormals(bool flush = true) {
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
  ScopedFlushDenormals(const ScopedFlushDenormals&) = delete;
  ScopedFlushDenormals& operator=(const ScopedFlushDenormals&) = delete;

 private:
  unsigned saved_ = 0;
};

}  // namespace cpu
}  // namespace constmem
#pragma GCC visibility pop
