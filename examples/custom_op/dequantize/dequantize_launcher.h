// SPDX-License-Identifier: Apache-2.0
// The plain C++ interface between Dequantize's framework kernels and its CUDA code.
#pragma once

#include <cstdint>

#include "constmem/numeric.hpp"
#include "constmem/status.hpp"
#include "constmem/strategy.hpp"
#include "constmem/table.hpp"

namespace example {

// The op's two tables, in the order it declares them.
enum DequantizeTable { kCodebook = 0, kAbsmax = 1 };

// Codes as Dequantize reads them: `bytes` bytes of two 4-bit codes each, `block` outputs a scale.
struct DequantizeShape {
  std::int64_t bytes = 0;
  std::int64_t block = 64;
};

// y = Dequantize(codes, codebook, absmax) enqueued on `stream`, y of Out (float32, float16 or
// bfloat16): y[i] = codebook[code i] * absmax[i / block], computed in float32.
template <class Out>
constmem::Status LaunchDequantize(constmem::GpuStream stream, const std::uint8_t* codes, Out* y,
                                  const DequantizeShape& shape,
                                  const constmem::TableView<float>& codebook,
                                  const constmem::TableView<float>& absmax);

// Where LaunchDequantize puts `table` (kCodebook or kAbsmax) of `count` entries from `source`.
constmem::Placement DequantizePlacement(int table, std::int64_t count, constmem::SourceKind source);

}  // namespace example
