// SPDX-License-Identifier: Apache-2.0
// ApplyGain, described once for every framework (constmem/op_description.hpp): y[..., i] =
// x[..., i] * gains[row], one gain per row (the product of x's leading dimensions).
#pragma once

#include <cstdint>
#include <string>

#include "apply_gain/apply_gain_launcher.h"
#include "constmem/op_description.hpp"

namespace example {

struct ApplyGainOp : constmem::OpDescription {
  static constexpr constmem::OpNames kNames{"example", "ApplyGain", "apply_gain", "x", "gains"};
  static constexpr constmem::TableRule kTable{1, kMaxGains};
  static constexpr constmem::DataTypeSet kDataTypes{constmem::DataType::kFloat32};

  // x as a matrix: rows of row_length samples.
  struct Shape {
    std::int64_t rows = 1;
    std::int64_t row_length = 0;
  };
  static constmem::Status Output(const constmem::Dims& x, const Params&, std::int64_t gains,
                                 Shape* shape, constmem::Dims* y) {
    if (x.empty()) return constmem::InvalidArgument("x must have rank 1 or more; got a scalar");
    *y = x;
    const std::int64_t rows = constmem::RowCount(x);
    if (rows < 0 || gains < 0) return constmem::Status::Ok();  // not known yet
    shape->rows = rows;
    shape->row_length = x.back();
    if (gains != rows) {
      return constmem::InvalidArgument("gains must have one entry per row of x (" +
                                       std::to_string(rows) + "); got " + std::to_string(gains));
    }
    return constmem::Status::Ok();
  }

  // On the framework's CPU threads, in shards sized from the cost of an element.
  template <class T, class Shard>
  static void RunCpu(const Params&, const Shape& shape, const T* x, T* y, const T* gains,
                     std::int64_t, const Shard& shard) {
    shard(shape.rows * shape.row_length, 2, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) y[i] = x[i] * gains[i / shape.row_length];
    });
  }
  template <class T>
  static constmem::Status Launch(constmem::GpuStream stream, const Params&, const Shape& shape,
                                 const T* x, T* y, const constmem::TableView<T>& gains) {
    return LaunchApplyGain(stream, x, y, shape.rows, shape.row_length, gains);
  }
  template <class T>
  static constmem::Placement Place(std::int64_t count, constmem::SourceKind source) {
    return ApplyGainPlacement(count, source);
  }
};

}  // namespace example
