// SPDX-License-Identifier: Apache-2.0
// CausalConv1d, described once for every framework (constmem/op_description.hpp): a depthwise
// causal convolution with two tables, each with its own size, form and placement:
//
//   y[..., c, t] = bias[c] + sum_j weight[c * k + j] * x[..., c, t - (k - 1) + j]
//
// for x of shape [..., C, L] (samples before a row's start are zeros), k = weight's size / C.
// torch.nn.functional.conv1d(pad(x, (k - 1, 0)), weight.view(C, 1, k), bias, groups=C) computes
// the same.
#pragma once

#include <cstdint>
#include <string>

#include "causal_conv1d/causal_conv1d_functor.h"
#include "causal_conv1d/causal_conv1d_launcher.h"
#include "constmem/op_description.hpp"

namespace example {

struct CausalConv1dOp : constmem::OpDescription {
  static constexpr constmem::OpNames kNames{"example", "CausalConv1d", "causal_conv1d", "x",
                                            "weight"};
  static constexpr constmem::TableSpec kTables[] = {
      {"weight", 1, std::int64_t{1} << 20},  // any size: a large one is read from global memory
      {"bias", 1, 64 * 1024},
  };
  static constexpr int kTableCount = 2;
  static constexpr constmem::DataTypeSet kDataTypes{constmem::DataType::kFloat32};
  static constexpr bool kElementwise = false;  // y[t] reads x[t - k + 1 .. t]

  using Shape = CausalConvShape;
  static constmem::Status Output(const constmem::Dims& x, const Params&,
                                 const constmem::TableSizes& sizes, Shape* shape,
                                 constmem::Dims* y) {
    if (x.size() < 2) {
      return constmem::InvalidArgument("x must have rank 2 or more ([..., C, L]); got rank " +
                                       std::to_string(x.size()));
    }
    *y = x;
    const std::int64_t channels = x[x.size() - 2];
    const std::int64_t rows = constmem::RowCount(x);
    if (rows < 0 || channels < 0 || sizes[kWeight] < 0 || sizes[kBias] < 0) {
      return constmem::Status::Ok();  // not known yet
    }
    if (sizes[kBias] != channels) {
      return constmem::InvalidArgument("bias must have one entry per channel (" +
                                       std::to_string(channels) + "); got " +
                                       std::to_string(sizes[kBias]));
    }
    if (channels == 0 || sizes[kWeight] % channels != 0) {
      return constmem::InvalidArgument("weight must have the same number of taps for each of the " +
                                       std::to_string(channels) + " channels; got " +
                                       std::to_string(sizes[kWeight]) + " entries");
    }
    shape->rows = rows;
    shape->channels = channels;
    shape->length = x.back();
    shape->taps = sizes[kWeight] / channels;
    return constmem::Status::Ok();
  }

  // On the framework's CPU threads, a row at a time.
  template <class T, class Shard>
  static void RunCpu(const Params&, const Shape& shape, const T* x, T* y,
                     const constmem::Tables<T>& tables, const Shard& shard) {
    const float* weight = tables[kWeight].values;
    const float* bias = tables[kBias].values;
    shard(shape.rows, shape.length * shape.taps, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t r = begin; r < end; ++r) {
        const std::int64_t c = r % shape.channels;
        const float* row = x + r * shape.length;
        for (std::int64_t t = 0; t < shape.length; ++t) {
          y[r * shape.length + t] =
              CausalConvOutput(row, t, weight, c * shape.taps, shape.taps, bias[c]);
        }
      }
    });
  }
  template <class T>
  static constmem::Status Launch(constmem::GpuStream stream, const Params&, const Shape& shape,
                                 const T* x, T* y, const constmem::Tables<T>& tables) {
    return LaunchCausalConv1d(stream, x, y, shape, tables[kWeight], tables[kBias]);
  }
  template <class T>
  static constmem::Placement Place(int table, std::int64_t count, constmem::SourceKind source) {
    return CausalConv1dPlacement(table, count, source);
  }
};

}  // namespace example
