// SPDX-License-Identifier: Apache-2.0
// The plain C++ interface between Interpolate's framework kernels (host compiler) and its CUDA
// code (nvcc, no framework header). The stream is the framework's raw CUDA stream.
#pragma once

#include <cstdint>

#include "constmem/numeric.hpp"
#include "constmem/status.hpp"
#include "constmem/strategy.hpp"
#include "constmem/table.hpp"

#pragma GCC visibility push(hidden)
namespace constmem {
namespace ops {

// Enqueues y = interpolate(x) into `knots` over [lo, hi] (interpolate_functor.h) on `stream` and
// returns without waiting. The knots are read at indices that differ from lane to lane: they go
// to shared memory (each block stages them; small host knots from the kernel's parameter) or
// global memory, from any source. Of float32 knots in global memory past the 64 KiB that a block
// stages, each block stages the first 16,384 all the same (a shared prefix); the placement stays
// kGlobalMemory. In is the data's type, T the type it is computed in and the knots'
// (ComputeTypeOf<In>: float for float16 and bfloat16 data).
template <class In, class T = ComputeTypeOf<In>>
Status LaunchInterpolate(GpuStream stream, const In* x, In* y, std::int64_t count,
                         const TableView<T>& knots, double lo, double hi,
                         LaunchReport* report = nullptr);

// Whether a launch in global memory stages the first knots of a table larger than what a block
// stages: as LaunchInterpolate does, always, or never.
enum class InterpolatePrefix { kAuto, kAlways, kNever };

// The same with the placement chosen by the caller (benchmarks, tests of every placement).
template <class In, class T = ComputeTypeOf<In>>
Status LaunchInterpolateWithPlacement(GpuStream stream, const In* x, In* y, std::int64_t count,
                                      const TableView<T>& knots, double lo, double hi,
                                      Placement placement, LaunchReport* report = nullptr,
                                      InterpolatePrefix prefix = InterpolatePrefix::kAuto);

// Where LaunchInterpolate puts `count` knots of T from `source` in a launch of `launch_elements`
// output elements (ChoosePlacement): the same for all data computed in T.
template <class T>
Placement InterpolatePlacement(std::int64_t count, SourceKind source,
                               std::int64_t launch_elements = kUnknownLaunchElements);

// Whether LaunchInterpolate also stages the first knots of such a table that it reads from global
// memory (Placement::kGlobalMemory, a table larger than what a block stages).
template <class T>
bool InterpolateStagesPrefix(std::int64_t count, SourceKind source,
                             std::int64_t launch_elements = kUnknownLaunchElements);

}  // namespace ops
}  // namespace constmem
#pragma GCC visibility pop
