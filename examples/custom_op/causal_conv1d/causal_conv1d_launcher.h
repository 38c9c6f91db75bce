// SPDX-License-Identifier: Apache-2.0
// The plain C++ interface between CausalConv1d's framework kernels and its CUDA code.
#pragma once

#include <cstdint>

#include "constmem/status.hpp"
#include "constmem/strategy.hpp"
#include "constmem/table.hpp"

namespace example {

// x as CausalConv1d reads it: rows of `length` samples, row r of channel r % channels.
struct CausalConvShape {
  std::int64_t rows = 0;
  std::int64_t channels = 1;
  std::int64_t length = 0;
  std::int64_t taps = 1;  // per channel
};

// The op's two tables, in the order it declares them.
enum CausalConvTable { kWeight = 0, kBias = 1 };

// y = CausalConv1d(x, weight, bias) enqueued on `stream`: weight holds channels * taps entries
// (channel c's at c * taps), bias one per channel. Each table is placed by its own size and source.
constmem::Status LaunchCausalConv1d(constmem::GpuStream stream, const float* x, float* y,
                                    const CausalConvShape& shape,
                                    const constmem::TableView<float>& weight,
                                    const constmem::TableView<float>& bias);

// Where LaunchCausalConv1d puts `table` (kWeight or kBias) of `count` entries from `source`.
constmem::Placement CausalConv1dPlacement(int table, std::int64_t count,
                                          constmem::SourceKind source);

}  // namespace example
