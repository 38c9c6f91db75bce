// SPDX-License-Identifier: Apache-2.0
// A table as a launcher receives it, from any framework: where its values are and how they may be
// read. Host-only: no CUDA include, so framework code compiled by the host compiler can build one.
#pragma once

#include <cstdint>

#include "constmem/strategy.hpp"

struct CUstream_st;  // cudaStream_t is CUstream_st*, in every CUDA version

namespace constmem {

// A CUDA stream as host code without CUDA's headers names it: a launcher's first parameter.
using GpuStream = CUstream_st*;

template <class T>
struct TableView {
  const T* values = nullptr;
  std::int64_t size = 0;
  SourceKind source = SourceKind::kDevice;
  // The same values are likely to come again (an attr, a model's fixed coefficients): worth
  // comparing against what a bank slot already holds, to skip the copy.
  bool repeats = false;
};

// What a launch did with its table, for tests and benchmarks.
struct LaunchReport {
  Placement placement = Placement::kConstantBank;
  bool upload_skipped = false;
};

}  // namespace constmem
