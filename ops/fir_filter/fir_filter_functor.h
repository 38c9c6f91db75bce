// SPDX-License-Identifier: Apache-2.0
// FirFilter's arithmetic, shared by the CPU kernel, the GPU kernel's tests and the benchmarks.
// Plain C++: no TensorFlow and no CUDA include.
//
// A 1-D FIR filter along the last axis, as a correlation (what tf.nn.conv1d computes):
//
//   y[i] = 0;  for j in 0..k-1:  y[i] = fma(xp[i + j], taps[j], y[i])
//
// where xp is the row padded with zeros: `pad_left` before it (SAME: (k-1)/2, VALID: 0). The taps
// are applied in order with one rounding each, on the CPU as on the GPU, so the two agree bit for
// bit.
#pragma once

#include <cmath>
#include <cstdint>

#include "constmem/strategy.hpp"

#pragma GCC visibility push(hidden)
namespace constmem {
namespace ops {

// The most taps FirFilter takes: the table limit of every constmem op (2^20).
constexpr std::int64_t kFirMaxTaps = kMaxTableEntries;
// The longest filter the GPU's tiled kernels take in one pass: they keep two tiles plus k-1 samples
// of halo each in shared memory, which for 2,048 taps is about 90 KiB (float32) or 108 KiB
// (float64), and its taps fill the constant bank. Longer filters run through the same tiles in
// chunks of this many taps, the outputs staying in registers from chunk to chunk (the same FMAs in
// the same order), their taps read from global memory.
constexpr std::int64_t kFirTiledMaxTaps = 2048;
constexpr std::int64_t kFirMaxElements = std::int64_t{1} << 62;

enum class FirPadding { kSame, kValid };

#pragma GCC visibility pop  // a value type bindings keep in their own classes (visibility.hpp)
struct FirShape {
  std::int64_t rows = 0;      // product of the leading dimensions
  std::int64_t length = 0;    // n, samples per row
  std::int64_t outputs = 0;   // m, outputs per row
  std::int64_t taps = 0;      // k
  std::int64_t pad_left = 0;  // zeros before each row
};
#pragma GCC visibility push(hidden)

// SAME keeps the length (TensorFlow's rule: (k-1)/2 zeros before, the rest after); VALID keeps
// the outputs whose window lies inside the row, none when the taps outnumber the samples.
inline FirShape MakeFirShape(std::int64_t rows, std::int64_t length, std::int64_t taps,
                             FirPadding padding) {
  FirShape shape;
  shape.rows = rows;
  shape.length = length;
  shape.taps = taps;
  if (padding == FirPadding::kSame) {
    shape.outputs = length;
    shape.pad_left = (taps - 1) / 2;
  } else {
    shape.outputs = length >= taps ? length - taps + 1 : 0;
  }
  return shape;
}

// Output i of one row.
template <class T>
inline T FirOutput(const T* row, const FirShape& shape, const T* taps, std::int64_t i) {
  T y = T(0);
  for (std::int64_t j = 0; j < shape.taps; ++j) {
    const std::int64_t source = i + j - shape.pad_left;
    const T sample = source >= 0 && source < shape.length ? row[source] : T(0);
    y = std::fma(sample, taps[j], y);
  }
  return y;
}

}  // namespace ops
}  // namespace constmem
#pragma GCC visibility pop
