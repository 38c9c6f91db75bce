// SPDX-License-Identifier: Apache-2.0
// A table as a launcher receives it, from any framework: where its values are and how they may be
// read. Host-only: no CUDA include, so framework code compiled by the host compiler can build one.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "constmem/strategy.hpp"
#include "constmem/visibility.hpp"

struct CUstream_st;  // cudaStream_t is CUstream_st*, in every CUDA version

// Private to each library that compiles it (visibility.hpp).
#pragma GCC visibility push(hidden)
namespace constmem {

// A CUDA stream as host code without CUDA's headers names it: a launcher's first parameter.
using GpuStream = CUstream_st*;

template <class T>
struct CONSTMEM_VISIBLE_TYPE TableView {
  const T* values = nullptr;
  std::int64_t size = 0;
  SourceKind source = SourceKind::kDevice;
  // The same values are likely to come again (an attr, a model's fixed coefficients): worth
  // comparing against what a bank slot already holds, to skip the copy.
  bool repeats = false;
};

// A float64 value rounded to T (float or double) as IEEE 754 rounds it, to nearest: past
// float32's range that is +-infinity (or +-FLT_MAX within half an ulp of it). A plain conversion of
// such a value is undefined behaviour in C++, and every binding reads float64s from its caller.
template <class T>
T RoundFromFloat64(double value) {
  static_assert(std::is_floating_point<T>::value, "a float32 or float64 entry");
  if constexpr (sizeof(T) == sizeof(double)) {
    return value;
  } else {
    const double magnitude = std::fabs(value);
    if (!(magnitude > FLT_MAX)) return static_cast<T>(value);  // in range, or NaN
    // Half an ulp of FLT_MAX (2^103) above it, a tie rounds to even: infinity.
    const double rounded = magnitude < double{FLT_MAX} + 0x1p103 ? FLT_MAX : INFINITY;
    return static_cast<T>(std::copysign(rounded, value));
  }
}

// A launch captured into a CUDA graph, as UpdateCapturedTable (dispatch.cuh) needs it.
struct CONSTMEM_VISIBLE_TYPE CapturedTable {
  void* buffer = nullptr;  // the graph's device copy of a host table, or nullptr
  std::int64_t size = 0;   // entries captured: an update keeps the number
  bool by_value = false;   // the table is in the kernel node's parameters
};

// What a launch did with its table, for tests, benchmarks and the update of a captured launch.
struct CONSTMEM_VISIBLE_TYPE LaunchReport {
  CONSTMEM_HIDDEN LaunchReport() = default;
  CONSTMEM_HIDDEN explicit LaunchReport(Placement chosen) : placement(chosen) {}
  Placement placement = Placement::kConstantBank;
  bool upload_skipped = false;
  bool captured = false;  // recorded into a CUDA graph; `capture` says how
  CapturedTable capture;
};

}  // namespace constmem
#pragma GCC visibility pop
