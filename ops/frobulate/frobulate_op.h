// SPDX-License-Identifier: Apache-2.0
// Frobulate as every framework binds it (constmem/op_description.hpp).
#pragma once

#include <cstdint>

#include "constmem/op_description.hpp"
#include "frobulate/frobulate_cpu.h"
#include "frobulate/frobulate_functor.h"
#include "frobulate/frobulate_launcher.h"

namespace constmem {
namespace ops {

struct FrobulateOp : OpDescription {
  static constexpr OpNames kNames{"constmem", "Frobulate", "frobulate", "data", "table"};
  static constexpr TableRule kTable{1, kFrobulateMaxTableSize, /*int32=*/true};
  static constexpr bool kCpuTableInDataType = true;  // the CPU kernel adds entries converted to T
  static constexpr std::int64_t kMaxElements = kFrobulateMaxElements;
  static constexpr const char* kDoc = R"doc(
output[i] = (((data[i] + table[0]) + table[1]) + ... + table[n-1]), left to right in T.
On the GPU the table is read from __constant__ memory with warp-uniform indices.
data: any shape, float32 or float64.
table: int32 vector of 1 to 1048576 entries.
)doc";

  template <class T, class Shard>
  static void RunCpu(const Params&, const Shape& shape, const T* data, T* out, const T* table,
                     std::int64_t size, const Shard& shard) {
    shard(shape.elements, size + 2, [&](std::int64_t begin, std::int64_t end) {
      FrobulateCpuRange(data, out, begin, end, table, size);
    });
  }
  template <class T>
  static Status Launch(GpuStream stream, const Params&, const Shape& shape, const T* data, T* out,
                       const TableView<std::int32_t>& table) {
    return LaunchFrobulate<T>(stream, data, out, shape.elements, table);
  }
  template <class T>
  static Placement Place(std::int64_t size, SourceKind source, std::int64_t launch_elements) {
    return FrobulatePlacement(size, source, launch_elements);
  }
};

}  // namespace ops
}  // namespace constmem
