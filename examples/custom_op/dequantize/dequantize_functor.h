// SPDX-License-Identifier: Apache-2.0
// Dequantize's arithmetic, once for the CPU kernel and the CUDA kernel.
#pragma once

#include <cstdint>

#include "constmem/host_device.hpp"

namespace example {

// Output i of `codes` (two 4-bit codes a byte, the first in the high nibble) in float32: its code's
// codebook entry times the absmax of its block of `block` outputs.
template <class Codebook, class Absmax>
CONSTMEM_HOST_DEVICE float DequantizeOutput(const std::uint8_t* codes, std::int64_t i,
                                            const Codebook& codebook, const Absmax& absmax,
                                            std::int64_t block) {
  const std::uint8_t byte = codes[i >> 1];
  const int code = (i & 1) ? (byte & 0x0f) : (byte >> 4);
  return codebook[code] * absmax[i / block];
}

}  // namespace example
