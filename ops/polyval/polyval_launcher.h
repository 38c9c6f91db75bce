// SPDX-License-Identifier: Apache-2.0
// The plain C++ interface between Polyval's framework kernels (host compiler) and its CUDA code
// (nvcc, no framework header). The stream is the framework's raw CUDA stream.
#pragma once

#include <cstdint>

#include "constmem/numeric.hpp"
#include "constmem/status.hpp"
#include "constmem/strategy.hpp"
#include "constmem/table.hpp"

#pragma GCC visibility push(hidden)
namespace constmem {
namespace ops {

// Enqueues y = polyval(coeffs, x) on `stream` and returns without waiting; coefficients highest
// degree first, 1 to kPolyvalMaxCoefficients of them. In is the data's type, T the type it is
// computed in and the coefficients' (ComputeTypeOf<In>: float for float16 and bfloat16 data).
template <class In, class T = ComputeTypeOf<In>>
Status LaunchPolyval(GpuStream stream, const In* x, In* y, std::int64_t count,
                     const TableView<T>& coeffs, LaunchReport* report = nullptr);

// The same with the placement chosen by the caller (benchmarks, tests of every placement).
template <class In, class T = ComputeTypeOf<In>>
Status LaunchPolyvalWithPlacement(GpuStream stream, const In* x, In* y, std::int64_t count,
                                  const TableView<T>& coeffs, Placement placement,
                                  LaunchReport* report = nullptr);

// Where LaunchPolyval puts `count` coefficients of T from `source` in a launch of
// `launch_elements` output elements (ChoosePlacement): the same for all data computed in T.
template <class T>
Placement PolyvalPlacement(std::int64_t count, SourceKind source,
                           std::int64_t launch_elements = kUnknownLaunchElements);

}  // namespace ops
}  // namespace constmem
#pragma GCC visibility pop
