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

}  // namespace constmem
#pragma GCC visibility pop
