// SPDX-License-Identifier: Apache-2.0
// Quantize's arithmetic, once for the CPU kernel and the CUDA kernels: bitsandbytes'
// quantize_4bit (its CPU implementation) bit for bit.
#pragma once

#include <cstdint>

#include "constmem/host_device.hpp"
#include "constmem/numeric.hpp"

namespace example {

// The smallest absmax a block is scaled by (bitsandbytes clamps it there: an all-zero block's
// elements become 0, not NaN).
constexpr float kQuantizeTiny = 1e-38f;

// A codebook as quantization reads it: its levels in ascending order (ties in the codebook's
// order, as a stable sort), the 15 midpoints between neighbours, and each sorted level's code.
struct QuantizeLevels {
  float bounds[15];
  std::uint8_t order[16];
};

// The codebook's levels sorted (insertion sort: stable, 16 entries) and their midpoints, each
// rounded once in float32 as bitsandbytes computes them ((a + b) / 2).
template <class Codebook>
CONSTMEM_HOST_DEVICE QuantizeLevels SortCodebook(const Codebook& codebook) {
  QuantizeLevels levels;
  float sorted[16];
  for (int i = 0; i < 16; ++i) {
    const float value = codebook[i];
    int j = i;
    for (; j > 0 && sorted[j - 1] > value; --j) {
      sorted[j] = sorted[j - 1];
      levels.order[j] = levels.order[j - 1];
    }
    sorted[j] = value;
    levels.order[j] = static_cast<std::uint8_t>(i);
  }
  for (int i = 0; i < 15; ++i) levels.bounds[i] = (sorted[i] + sorted[i + 1]) / 2.0f;
  return levels;
}

// max(m, |v|), NaN kept once met (as torch's max).
CONSTMEM_HOST_DEVICE float AbsMax(float m, float v) {
  const float a = v < 0 ? -v : v;
  return (a > m || a != a) ? a : m;
}

// A block's absmax as Quantize stores it: a whole block's as it is, the last partial block's
// clamped to kQuantizeTiny (as bitsandbytes stores them).
CONSTMEM_HOST_DEVICE float StoredAbsmax(float absmax, bool whole) {
  return whole || absmax >= kQuantizeTiny || absmax != absmax ? absmax : kQuantizeTiny;
}

// The code of x (float32) in a block whose stored absmax is `absmax`: x scaled into [-1, 1]
// (times the reciprocal in a whole block, divided in the last partial one, as bitsandbytes), then
// the sorted level it is nearest to, a midpoint itself going to the lower level (torch.bucketize),
// NaN to the lowest.
CONSTMEM_HOST_DEVICE int QuantizeCode(float x, float absmax, bool whole,
                                      const QuantizeLevels& levels) {
  const float clamped = absmax < kQuantizeTiny ? kQuantizeTiny : absmax;  // NaN kept
  float scaled = whole ? x * (1.0f / clamped) : x / clamped;
  scaled = scaled < -1.0f ? -1.0f : scaled > 1.0f ? 1.0f : scaled;
  int below = 0;
  for (int i = 0; i < 15; ++i) below += levels.bounds[i] < scaled ? 1 : 0;
  return levels.order[below];
}

// Byte k of the codes of x (`elements` of them, `block` a scale): elements 2k (the high nibble)
// and 2k + 1, each by its block's absmax.
template <class T, class Absmax>
CONSTMEM_HOST_DEVICE std::uint8_t QuantizeByte(const T* x, std::int64_t k, const Absmax& absmax,
                                               std::int64_t elements, std::int64_t block,
                                               const QuantizeLevels& levels) {
  int codes[2];
  for (int j = 0; j < 2; ++j) {
    const std::int64_t i = 2 * k + j;
    const std::int64_t b = i / block;
    const bool whole = (b + 1) * block <= elements;
    codes[j] = QuantizeCode(constmem::ToCompute<float>(x[i]), absmax[b], whole, levels);
  }
  return static_cast<std::uint8_t>((codes[0] << 4) | codes[1]);
}

}  // namespace example
