// SPDX-License-Identifier: Apache-2.0
// Upfirdn as every framework binds it (constmem/op_description.hpp).
#pragma once

#include <cstdint>
#include <string>

#include "constmem/op_description.hpp"
#include "upfirdn/upfirdn_cpu.h"
#include "upfirdn/upfirdn_functor.h"
#include "upfirdn/upfirdn_launcher.h"

namespace constmem {
namespace ops {

struct UpfirdnOp : OpDescription {
  static constexpr OpNames kNames{"constmem", "Upfirdn", "upfirdn", "x", "taps"};
  static constexpr TableRule kTable{1, kUpfirdnMaxTaps};
  static constexpr std::int64_t kMaxElements = kUpfirdnMaxElements;
  static constexpr bool kElementwise = false;  // a row is resampled as a whole
  static constexpr DataTypeSet kDataTypes{DataType::kFloat32, DataType::kFloat64,
                                          DataType::kFloat16, DataType::kBFloat16};
  static constexpr AttrSpec kAttrs[] = {{"up", AttrKind::kInt64}, {"down", AttrKind::kInt64}};
  static constexpr int kAttrCount = 2;
  static constexpr const char* kDoc = R"doc(
Upsample, FIR filter, downsample along the last axis: scipy.signal.upfirdn(taps, x, up, down).
Zeros are inserted (up - 1 after each sample), the result is convolved with the taps, and every
down-th sample is kept from the first: y[..., i] = sum_j taps[j] xup[..., i * down - j], computed
polyphase as fused multiply-adds from +0 over the terms inside the row, in ascending order of the
sample's distance back, bitwise alike on the CPU and the GPU.
x: rank 1 or more, float32, float64, float16 or bfloat16; n samples per row. float16 and bfloat16
are computed in float32 and rounded to nearest even: the float32 op's result on x cast to float32,
cast back.
taps: vector of 1 to 1048576 (2^20) taps of x's dtype (float32 for float16 and bfloat16).
up, down: 1 to 2147483647 (2^31 - 1) each.
The last dimension of y is ((n - 1) * up + k - 1) // down + 1.
)doc";

  struct Params {
    std::int64_t up = 1;
    std::int64_t down = 1;
    Status Read(const AttrValue* values, DataType) {
      up = values[0].int64;
      down = values[1].int64;
      CONSTMEM_RETURN_IF_ERROR(CheckRate("up", up));
      return CheckRate("down", down);
    }
    static Status CheckRate(const char* name, std::int64_t value) {
      if (value >= 1 && value <= kUpfirdnMaxRate) return Status::Ok();
      return InvalidArgument(std::string(name) + " must be 1 to " +
                             std::to_string(kUpfirdnMaxRate) + "; got " + std::to_string(value));
    }
  };
  using Shape = UpfirdnShape;

  // y has x's shape with the last dimension scipy's output length; unknown where x's last
  // dimension or the number of taps is.
  static Status Output(const Dims& x, const Params& params, std::int64_t taps, Shape* shape,
                       Dims* y) {
    if (x.empty()) {
      return InvalidArgument(
          "x must have rank 1 or more (upfirdn runs along the last axis); got a scalar");
    }
    const std::int64_t rows = RowCount(x);
    const std::int64_t length = x.back();
    *y = x;
    if (length < 0 || taps < 0) {
      y->back() = kUnknownDim;
      return Status::Ok();
    }
    // While shapes are inferred the rows may be unknown: the output length does not depend on
    // them, and `shape` is not used.
    CONSTMEM_RETURN_IF_ERROR(
        MakeUpfirdnShape(rows < 0 ? 0 : rows, length, taps, params.up, params.down, shape));
    y->back() = shape->outputs;
    return Status::Ok();
  }

  template <class T, class Shard>
  static void RunCpu(const Params&, const Shape& shape, const T* x, T* y,
                     const ComputeTypeOf<T>* taps, std::int64_t count, const Shard& shard) {
    // About ceil(k / up) fused multiply-adds per output.
    const std::int64_t cost = (count + shape.up - 1) / shape.up + 2;
    shard(shape.rows * shape.outputs, cost, [&](std::int64_t begin, std::int64_t end) {
      UpfirdnCpuRange(x, y, shape, taps, begin, end);
    });
  }
  template <class T>
  static Status Launch(GpuStream stream, const Params&, const Shape& shape, const T* x, T* y,
                       const TableView<ComputeTypeOf<T>>& taps) {
    return LaunchUpfirdn<T>(stream, x, y, shape, taps);
  }
  template <class T>
  static Placement Place(std::int64_t count, SourceKind source, std::int64_t launch_elements) {
    return UpfirdnPlacement<ComputeTypeOf<T>>(count, source, launch_elements);
  }
};

}  // namespace ops
}  // namespace constmem
