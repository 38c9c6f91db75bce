// SPDX-License-Identifier: Apache-2.0
// The plain C++ interface between FirFilter's framework kernels (host compiler) and its CUDA code
// (nvcc, no framework header). The stream is the framework's raw CUDA stream.
#pragma once

#include <cstddef>
#include <cstdint>

#include "constmem/numeric.hpp"
#include "constmem/status.hpp"
#include "constmem/strategy.hpp"
#include "constmem/table.hpp"
#include "fir_filter/fir_filter_functor.h"

#pragma GCC visibility push(hidden)
namespace constmem {
namespace ops {

// Enqueues y = FirFilter(x, taps) on `stream` and returns without waiting: `x` holds shape.rows x
// shape.length samples, `y` shape.rows x shape.outputs outputs (MakeFirShape). T is float, double,
// Float16 or BFloat16, the taps of its compute type (float for the 16-bit types, computed in float
// and rounded once: bitwise the CPU kernel's).
template <class T>
Status LaunchFirFilter(GpuStream stream, const T* x, T* y, const FirShape& shape,
                       const TableView<ComputeTypeOf<T>>& taps, LaunchReport* report = nullptr);

// The same with the placement chosen by the caller (benchmarks, tests of every placement).
template <class T>
Status LaunchFirFilterWithPlacement(GpuStream stream, const T* x, T* y, const FirShape& shape,
                                    const TableView<ComputeTypeOf<T>>& taps, Placement placement,
                                    LaunchReport* report = nullptr);

// LaunchFirFilterWithPlacement as on a GPU that offers at most `shared_bytes_per_block` of shared
// memory a block: tests run the kernels of GPUs with less shared memory on a larger one.
template <class T>
Status LaunchFirFilterWithSharedMemory(GpuStream stream, const T* x, T* y, const FirShape& shape,
                                       const TableView<ComputeTypeOf<T>>& taps, Placement placement,
                                       std::size_t shared_bytes_per_block,
                                       LaunchReport* report = nullptr);

// The threads a block of FirFilter's kernel for `taps` taps of T on a GPU that offers
// `shared_bytes_per_block` of shared memory a block: 256, or 64 where the tiles of 256 threads do
// not fit (compute capability 7.5; float64 filters of more than 64 taps on 8.6 and 8.9); 0 where
// nothing fits. Filters of more than kFirTiledMaxTaps take the tiles of kFirTiledMaxTaps.
template <class T>
int FirFilterBlockThreads(std::int64_t taps, std::size_t shared_bytes_per_block);

// Launches of at most this many outputs read device taps in place: a short filter's kernel runs
// through tens of millions of outputs in tens of microseconds (2^23 in 15 us on an H200), about
// what the copy into the bank costs a call (10 to 12 us of host time; docs/performance.md,
// section 15).
constexpr std::int64_t kFirFilterSmallLaunchElements = std::int64_t{1} << 25;

// Where LaunchFirFilter puts `count` taps of T (float or double) from `source` in a launch of
// `launch_elements` output elements (ChoosePlacement).
template <class T>
Placement FirFilterPlacement(std::int64_t count, SourceKind source,
                             std::int64_t launch_elements = kUnknownLaunchElements);

}  // namespace ops
}  // namespace constmem
#pragma GCC visibility pop
