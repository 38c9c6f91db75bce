// SPDX-License-Identifier: Apache-2.0
// A table as a launcher receives it, from any framework: where its values are and how they may be
// read. Host-only: no CUDA include, so framework code compiled by the host compiler can build one.
#pragma once

#include <cstdint>

#include "constmem/strategy.hpp"

namespace constmem {

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
