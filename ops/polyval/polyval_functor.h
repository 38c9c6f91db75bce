// SPDX-License-Identifier: Apache-2.0
// Polyval's arithmetic, shared by the CPU kernel, the GPU kernel's tests and the benchmarks. Plain
// C++: no TensorFlow and no CUDA include.
//
//   y = c[0];  for j in 1..n-1:  y = fma(y, x, c[j])        (Horner's rule, highest degree first)
//
// Each step rounds once (a fused multiply-add), on the CPU as on the GPU, so the two agree bit for
// bit; np.polyval and tf.math.polyval round twice per step and may differ in the last bits.
#pragma once

#include <cmath>
#include <cstdint>

#include "constmem/strategy.hpp"

#pragma GCC visibility push(hidden)
namespace constmem {
namespace ops {

// The most coefficients (degree + 1) Polyval takes: every op's limit. Up to 4,096 they fit its
// constant bank (polyval_gpu.cu); more are read from global memory.
constexpr std::int64_t kPolyvalMaxCoefficients = kMaxTableEntries;
constexpr std::int64_t kPolyvalMaxElements = std::int64_t{1} << 62;

template <class T>
inline T PolyvalElement(T x, const T* coeffs, std::int64_t count) {
  T y = coeffs[0];
  for (std::int64_t j = 1; j < count; ++j) y = std::fma(y, x, coeffs[j]);
  return y;
}

}  // namespace ops
}  // namespace constmem
#pragma GCC visibility pop
