// SPDX-License-Identifier: Apache-2.0
// The plain C++ interface between Frobulate's TensorFlow kernel (g++, TensorFlow headers) and its
// CUDA code (nvcc, no TensorFlow header). The stream is TensorFlow's raw CUDA stream.
#pragma once

#include <cstdint>

#include "constmem/status.hpp"
#include "constmem/strategy.hpp"
#include "constmem/table.hpp"

#pragma GCC visibility push(hidden)
namespace constmem {
namespace ops {

// Enqueues out = Frobulate(data, table) on `stream` and returns without waiting. Host tables are
// read before it returns (by-value) or copied by the core (bank); a pinned host table must stay
// alive until the stream has passed this point.
template <class T>
Status LaunchFrobulate(GpuStream stream, const T* data, T* out, std::int64_t count,
                       const TableView<std::int32_t>& table, LaunchReport* report = nullptr);

// The same with the placement chosen by the caller, for benchmarks that compare placements:
// by-value needs a host table of at most 1,024 entries, global memory a device table.
template <class T>
Status LaunchFrobulateWithPlacement(GpuStream stream, const T* data, T* out, std::int64_t count,
                                    const TableView<std::int32_t>& table, Placement placement,
                                    LaunchReport* report = nullptr);

// Where LaunchFrobulate puts a table of this size and source in a launch of `launch_elements`
// output elements (ChoosePlacement).
Placement FrobulatePlacement(std::int64_t table_size, SourceKind source,
                             std::int64_t launch_elements = kUnknownLaunchElements);

}  // namespace ops
}  // namespace constmem
#pragma GCC visibility pop
