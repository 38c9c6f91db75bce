// SPDX-License-Identifier: Apache-2.0
// The plain C++ interface between SeparableFilter's framework kernels (host compiler) and its CUDA
// code (nvcc, no framework header). The stream is the framework's raw CUDA stream.
#pragma once

#include <cstddef>
#include <cstdint>

#include "constmem/status.hpp"
#include "constmem/strategy.hpp"
#include "constmem/table.hpp"
#include "separable_filter/separable_filter_functor.h"

namespace constmem {
namespace ops {

// Enqueues y = SeparableFilter(x, row, column) on `stream` and returns without waiting: `row`
// holds shape.kw entries (shape.images * kw with shape.per_image_taps), `column` kh (images * kh).
// The kernels read both as one table (JoinSeparableTaps), placed by its size: joined on the host
// when both are host tables, else in a stream-ordered device buffer freed after the launch (under
// CUDA graph capture both must then be device tables).
template <class In, class T>
Status LaunchSeparableFilter(GpuStream stream, const In* x, In* y, const SeparableShape& shape,
                             const TableView<T>& row, const TableView<T>& column,
                             LaunchReport* report = nullptr);

// Enqueues y = SeparableFilter(x, taps) on `stream` and returns without waiting. `x` and `y` hold
// shape.Elements() values in shape.layout and must not overlap; `taps` holds shape.TableSize()
// entries (row taps then column taps, per image when shape.per_image_taps). (In, T) is (float,
// float), (double, double), (Float16, float), (BFloat16, float) or (uint8_t, float):
// T = ComputeTypeOf<In>.
template <class In, class T>
Status LaunchSeparableFilter(GpuStream stream, const In* x, In* y, const SeparableShape& shape,
                             const TableView<T>& taps, LaunchReport* report = nullptr);

// The same with the placement chosen by the caller (benchmarks, tests of every placement).
template <class In, class T>
Status LaunchSeparableFilterWithPlacement(GpuStream stream, const In* x, In* y,
                                          const SeparableShape& shape, const TableView<T>& taps,
                                          Placement placement, LaunchReport* report = nullptr);

// LaunchSeparableFilterWithPlacement as on a GPU that offers at most `shared_bytes_per_block` of
// shared memory a block: tests run the small tiles of GPUs with less shared memory (64 KiB on
// compute capability 7.5) on a larger one.
template <class In, class T>
Status LaunchSeparableFilterWithSharedMemory(GpuStream stream, const In* x, In* y,
                                             const SeparableShape& shape, const TableView<T>& taps,
                                             Placement placement,
                                             std::size_t shared_bytes_per_block,
                                             LaunchReport* report = nullptr);

// The threads a block of SeparableFilter's shared-memory kernels for `shape` with data In on a GPU
// that offers `shared_bytes_per_block`: 256 (large tiles), 64 (small tiles, filters of at most
// kSeparableSmallTileMaxTaps along each axis), 128 (the two passes, where no tile fits) or 0 where
// nothing fits. (Square filters of 3 to 9 taps on aligned rows of whole vectors, 3 or 5 on RGB
// rows, take the register kernel instead: no tile, at most 20 KiB of static shared memory.)
template <class In>
int SeparableFilterBlockThreads(const SeparableShape& shape, std::size_t shared_bytes_per_block);

// Launches of at most this many output elements read device taps in place. The kernel runs through
// them in a few microseconds, and past them the row and column taps cost two copies into the bank
// (about 18 us of host time a call just past the general kSmallLaunchElements): the bank must
// first save more than those copies cost.
constexpr std::int64_t kSeparableSmallLaunchElements = std::int64_t{1} << 23;

// Where LaunchSeparableFilter puts a table of `count` taps of T (row and column taps joined) from
// `source` in a launch of `launch_elements` output elements (ChoosePlacement).
template <class T>
Placement SeparableFilterPlacement(std::int64_t count, SourceKind source,
                                   std::int64_t launch_elements = kUnknownLaunchElements);

}  // namespace ops
}  // namespace constmem
