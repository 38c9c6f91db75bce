// SPDX-License-Identifier: Apache-2.0
// The plain C++ interface between FirFilter's framework kernels (host compiler) and its CUDA code
// (nvcc, no framework header). The stream is the framework's raw CUDA stream.
#pragma once

#include <cstdint>

#include "adapter/gpu_table.h"
#include "constmem/status.hpp"
#include "constmem/strategy.hpp"
#include "constmem/table.hpp"
#include "fir_filter/fir_filter_functor.h"

namespace constmem {
namespace ops {

// Enqueues y = FirFilter(x, taps) on `stream` and returns without waiting: `x` holds shape.rows x
// shape.length samples, `y` shape.rows x shape.outputs outputs (MakeFirShape).
template <class T>
Status LaunchFirFilter(GpuStream stream, const T* x, T* y, const FirShape& shape,
                       const TableView<T>& taps, LaunchReport* report = nullptr);

// The same with the placement chosen by the caller (benchmarks, tests of every placement).
template <class T>
Status LaunchFirFilterWithPlacement(GpuStream stream, const T* x, T* y, const FirShape& shape,
                                    const TableView<T>& taps, Placement placement,
                                    LaunchReport* report = nullptr);

// Where LaunchFirFilter puts `count` taps of T from `source`.
template <class T>
Placement FirFilterPlacement(std::int64_t count, SourceKind source);

}  // namespace ops
}  // namespace constmem
