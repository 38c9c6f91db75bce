// SPDX-License-Identifier: Apache-2.0
// The plain C++ interface between ApplyGain's TensorFlow kernels and its CUDA code.
#pragma once

#include <cstdint>

#include "constmem/status.hpp"
#include "constmem/strategy.hpp"
#include "constmem/table.hpp"

namespace example {

// The most rows (one gain each): what the constant bank holds. A device table up to this size
// could also be read from global memory, but a host table has nowhere else to go.
constexpr std::int64_t kMaxGains = 4 * 1024;

// y[r, i] = x[r, i] * gains[r] for rows x row_length samples, enqueued on `stream`.
constmem::Status LaunchApplyGain(constmem::GpuStream stream, const float* x, float* y,
                                 std::int64_t rows, std::int64_t row_length,
                                 const constmem::TableView<float>& gains);

constmem::Placement ApplyGainPlacement(std::int64_t count, constmem::SourceKind source);

}  // namespace example
