// SPDX-License-Identifier: Apache-2.0
// The plain C++ interface between Quantize's framework kernels and its CUDA code.
#pragma once

#include <cstdint>

#include "constmem/numeric.hpp"
#include "constmem/status.hpp"
#include "constmem/strategy.hpp"
#include "constmem/table.hpp"

namespace example {

// Quantize's two outputs, in the order it declares them.
enum QuantizeOutput { kCodes = 0, kAbsmax = 1 };

// Data as Quantize reads it: `elements` values (an even count), `block` a scale.
struct QuantizeShape {
  std::int64_t elements = 0;
  std::int64_t block = 64;
};

// codes and absmax = Quantize(x, codebook) enqueued on `stream`, x of T (float32, float16 or
// bfloat16): one warp a block reduces its absmax, then one thread a byte writes its two codes.
template <class T>
constmem::Status LaunchQuantize(constmem::GpuStream stream, const T* x, std::uint8_t* codes,
                                float* absmax, const QuantizeShape& shape,
                                const constmem::TableView<float>& codebook);

// Where LaunchQuantize puts the codebook of `count` entries from `source`.
constmem::Placement QuantizePlacement(std::int64_t count, constmem::SourceKind source);

}  // namespace example
