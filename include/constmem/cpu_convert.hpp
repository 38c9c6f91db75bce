// SPDX-License-Identifier: Apache-2.0
// Rows of 16-bit data (Float16, BFloat16) to float and back on the CPU, with the bits of
// ToCompute and FromCompute: what a CPU kernel that computes 16-bit data in float32 converts its
// rows with, around its float kernel.
#pragma once

#include <cstdint>
#include <cstring>

#include "constmem/cpu_isa.hpp"
#include "constmem/numeric.hpp"

#if CONSTMEM_CPU_X86
#include <immintrin.h>
#endif

// Private to each library that compiles it (visibility.hpp).
#pragma GCC visibility push(hidden)
namespace constmem {
namespace cpu {

// Rows of 16-bit data to float and back, with the bits of ToCompute and FromCompute. With F16C
// (every AVX2 CPU) 8 at a time: float16's conversions in hardware (rounding to nearest even; a
// NaN result rewritten to FromCompute's NaN), bfloat16's in integer lanes; else one at a time.
#if CONSTMEM_CPU_X86
__attribute__((target("avx2,f16c"))) inline void WidenVectors(const Float16* from, float* to,
                                                              std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i));
    _mm256_storeu_ps(to + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) to[i] = ToCompute<float>(from[i]);
}
__attribute__((target("avx2,f16c"))) inline void NarrowVectors(const float* from, Float16* to,
                                                               std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(from + i);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(to + i),
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0) {
      for (std::int64_t j = i; j < i + 8; ++j) to[j] = FromCompute<Float16>(from[j]);
    }
  }
  for (; i < n; ++i) to[i] = FromCompute<Float16>(from[i]);
}
__attribute__((target("avx2,f16c"))) inline void WidenVectors(const BFloat16* from, float* to,
                                                              std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) to[i] = ToCompute<float>(from[i]);
}
__attribute__((target("avx2,f16c"))) inline void NarrowVectors(const float* from, BFloat16* to,
                                                               std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint32_t f;
    std::memcpy(&f, from + i, sizeof(f));
    const std::uint32_t rounded = (f + 0x7fffu + ((f >> 16) & 1u)) >> 16;
    const std::uint32_t nan = (f >> 16) | 0x40u;  // FromCompute's NaN
    to[i].bits = static_cast<std::uint16_t>((f & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
  }
}
inline bool HasF16c() {
  static const bool has = __builtin_cpu_supports("f16c");
  return has;
}
#endif

template <class T>
void WidenRow(const T* from, float* to, std::int64_t n, Isa isa) {
#if CONSTMEM_CPU_X86
  if (isa != Isa::kPortable && HasF16c()) return WidenVectors(from, to, n);
#endif
  (void)isa;
  for (std::int64_t i = 0; i < n; ++i) to[i] = ToCompute<float>(from[i]);
}

template <class T>
void NarrowRow(const float* from, T* to, std::int64_t n, Isa isa) {
#if CONSTMEM_CPU_X86
  if (isa != Isa::kPortable && HasF16c()) return NarrowVectors(from, to, n);
#endif
  (void)isa;
  for (std::int64_t i = 0; i < n; ++i) to[i] = FromCompute<T>(from[i]);
}

}  // namespace cpu
}  // namespace constmem
#pragma GCC visibility pop
