// SPDX-License-Identifier: Apache-2.0
// The CPU instruction sets constmem's CPU kernels are compiled for, and the one used at run time.
//
// TensorFlow's pip build targets baseline x86-64, so an op library must run on any CPU that
// TensorFlow runs on. Kernels are therefore compiled several times, once per instruction set with
// a target attribute, and picked at run time:
//
//   CONSTMEM_TARGET_AVX512 void Kernel512(...) { Body<float, 64>(...); }
//   CONSTMEM_TARGET_AVX2   void Kernel256(...) { Body<float, 32>(...); }
//                          void KernelPortable(...) { Body<float, 16>(...); }
//
// `CONSTMEM_CPU_ISA=portable|avx2|avx512` caps the choice (to compare variants, or to rule one
// out); it never selects a set the CPU lacks. Host-only; no CUDA and no TensorFlow include.
#pragma once

#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

// Private to each library that compiles it (visibility.hpp).
#pragma GCC visibility push(hidden)
namespace constmem {
namespace cpu {

enum class Isa : int { kPortable = 0, kAvx2 = 1, kAvx512 = 2 };

inline const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kAvx512:
      return "avx512";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kPortable:
      break;
  }
  return "portable";
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CONSTMEM_CPU_X86 1
#define CONSTMEM_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define CONSTMEM_TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx512dq,avx2,fma")))
#else
#define CONSTMEM_CPU_X86 0
#endif

inline bool IsaSupported(Isa isa) {
  switch (isa) {
    case Isa::kPortable:
      return true;
#if CONSTMEM_CPU_X86
    case Isa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512dq");
#endif
    default:
      return false;
  }
}

// The widest supported set, capped by $CONSTMEM_CPU_ISA. Decided once per process.
inline Isa BestIsa() {
  static const Isa chosen = [] {
    Isa cap = Isa::kAvx512;
    if (const char* requested = std::getenv("CONSTMEM_CPU_ISA")) {
      if (std::strcmp(requested, "portable") == 0) cap = Isa::kPortable;
      if (std::strcmp(requested, "avx2") == 0) cap = Isa::kAvx2;
    }
    for (int i = static_cast<int>(cap); i > 0; --i) {
      if (IsaSupported(static_cast<Isa>(i))) return static_cast<Isa>(i);
    }
    return Isa::kPortable;
  }();
  return chosen;
}

// Whether 512-bit arithmetic runs at twice the 256-bit rate. AMD's Zen 4 (family 19h, whose only
// cores with AVX-512 are Zen 4) executes each 512-bit operation as two 256-bit halves: there
// AVX-512 brings wider loads and shuffles but no more arithmetic.
inline bool FullRateAvx512() {
  static const bool full_rate = [] {
#if CONSTMEM_CPU_X86
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) == 0) return true;
    char vendor[12];
    std::memcpy(vendor, &ebx, 4);
    std::memcpy(vendor + 4, &edx, 4);
    std::memcpy(vendor + 8, &ecx, 4);
    if (std::memcmp(vendor, "AuthenticAMD", 12) != 0) return true;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return true;
    const unsigned base_family = (eax >> 8) & 0xf;
    const unsigned family = base_family + (base_family == 0xf ? (eax >> 20) & 0xff : 0);
    return family != 0x19;
#else
    return true;
#endif
  }();
  return full_rate;
}

// The set for a kernel whose wider form pays for its width in shuffles and line-split loads
// (FirFilter's transposes, its unaligned sample loads): BestIsa(), but AVX2 where 512-bit
// arithmetic runs at half rate.
inline Isa BestIsaForShuffles() {
  const Isa best = BestIsa();
  return best == Isa::kAvx512 && !FullRateAvx512() ? Isa::kAvx2 : best;
}

// A GCC/Clang vector of `Bytes` bytes of T: arithmetic on it compiles to the instruction set of
// the function it is used in (one 512-bit add under AVX-512, two 256-bit adds under AVX2, NEON on
// aarch64). Loads and stores go through memcpy, so data need no alignment.
template <class T, int Bytes>
struct Vector {
  typedef T type __attribute__((vector_size(Bytes)));
  static constexpr int kLanes = Bytes / static_cast<int>(sizeof(T));
};

}  // namespace cpu
}  // namespace constmem
#pragma GCC visibility pop
