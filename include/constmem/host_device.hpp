// SPDX-License-Identifier: Apache-2.0
// Writing an op's arithmetic once for the CPU kernel (host compiler) and the CUDA kernel (nvcc):
//
//   template <class T, class Table>
//   CONSTMEM_HOST_DEVICE T MyElement(T x, const Table& table) {
//     return constmem::Fma(x, table[0], table[1]);
//   }
//
// `Table` is `const T*` on the CPU and whichever reader LaunchWithTable hands the kernel on the
// GPU. Both sides then execute the same operations in the same order and round alike. The macro
// already says `inline` (`__forceinline__` under nvcc): write it instead of `inline`, not beside
// it (a repeated `inline` is a compile error).
#pragma once

#include <cmath>
#include <cstdint>

#include "constmem/visibility.hpp"

#if defined(__CUDACC__)
#define CONSTMEM_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define CONSTMEM_HOST_DEVICE inline
#endif

// Private to each library that compiles it (visibility.hpp).
#pragma GCC visibility push(hidden)
namespace constmem {

// a * b + c rounded once, on either side (float and double).
template <class T>
CONSTMEM_HOST_DEVICE T Fma(T a, T b, T c) {
#if defined(__CUDA_ARCH__)
  return fma(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// Division of non-negative 32-bit integers by a divisor fixed for a launch: a multiply-high, an
// addition and two shifts, where a division by a run-time value takes about 20 instructions on a
// GPU (Granlund and Montgomery's round-up method, as CUTLASS's FastDivmod). Made on the host.
class CONSTMEM_VISIBLE_TYPE FastDivisor {
 public:
  FastDivisor() = default;
  CONSTMEM_HIDDEN explicit FastDivisor(std::uint32_t divisor) : divisor_(divisor) {
    int log = 0;  // ceil(log2(divisor))
    while ((std::uint64_t{1} << log) < divisor) ++log;
    multiplier_ = static_cast<std::uint32_t>(
        (std::uint64_t{1} << 32) * ((std::uint64_t{1} << log) - divisor) / divisor + 1);
    shift1_ = log > 0 ? 1 : 0;
    shift2_ = log > 0 ? log - 1 : 0;
  }
  CONSTMEM_HIDDEN CONSTMEM_HOST_DEVICE std::uint32_t divisor() const { return divisor_; }
  CONSTMEM_HIDDEN CONSTMEM_HOST_DEVICE std::uint32_t Divide(std::uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const std::uint32_t high = __umulhi(multiplier_, n);
#else
    const auto high =
        static_cast<std::uint32_t>((std::uint64_t{multiplier_} * std::uint64_t{n}) >> 32);
#endif
    return (high + ((n - high) >> shift1_)) >> shift2_;
  }

 private:
  std::uint32_t divisor_ = 1, multiplier_ = 1;
  int shift1_ = 0, shift2_ = 0;
};

}  // namespace constmem
#pragma GCC visibility pop
