// SPDX-License-Identifier: Apache-2.0
// FirFilter as every framework binds it (constmem/op_description.hpp).
#pragma once

#include <cstdint>
#include <string>

#include "constmem/op_description.hpp"
#include "fir_filter/fir_filter_cpu.h"
#include "fir_filter/fir_filter_functor.h"
#include "fir_filter/fir_filter_launcher.h"

namespace constmem {
namespace ops {

struct FirFilterOp : OpDescription {
  static constexpr OpNames kNames{"constmem", "FirFilter", "fir_filter", "x", "taps"};
  static constexpr TableRule kTable{1, kFirMaxTaps};
  static constexpr std::int64_t kMaxElements = kFirMaxElements;
  static constexpr bool kElementwise = false;  // a row is filtered as a whole
  static constexpr DataTypeSet kDataTypes{DataType::kFloat32, DataType::kFloat64,
                                          DataType::kFloat16, DataType::kBFloat16};
  static constexpr AttrSpec kAttrs[] = {{"padding", AttrKind::kChoice, "SAME,VALID"}};
  static constexpr int kAttrCount = 1;
  static constexpr const char* kDoc = R"doc(
A 1-D FIR filter along the last axis, as a correlation (what tf.nn.conv1d computes):
y[..., i] = sum_j xp[..., i + j] * taps[j], the taps applied in order with one fused multiply-add
each, xp the row with zero padding ((k-1)/2 zeros before it for SAME, none for VALID).
x: rank 1 or more, float32, float64, float16 or bfloat16. float16 and bfloat16 are computed in
float32 and rounded to nearest even: the float32 op's result on x cast to float32, cast back.
taps: vector of 1 to 1048576 (2^20) taps of x's dtype (float32 for float16 and bfloat16).
padding: SAME (as many outputs as samples) or VALID (n - k + 1 outputs, none if k > n).
)doc";

  struct Params {
    FirPadding padding = FirPadding::kSame;
    Status Read(const AttrValue* values, DataType) {
      padding = values[0].choice == "VALID" ? FirPadding::kValid : FirPadding::kSame;
      return Status::Ok();
    }
  };
  using Shape = FirShape;

  // y has x's shape with the last dimension n (SAME) or max(n - k + 1, 0) (VALID).
  static Status Output(const Dims& x, const Params& params, std::int64_t taps, Shape* shape,
                       Dims* y) {
    if (x.empty()) {
      return InvalidArgument(
          "x must have rank 1 or more (the filter runs along the last axis); got a scalar");
    }
    const std::int64_t length = x.back();
    *y = x;
    if (length < 0 || taps < 0) {
      if (params.padding == FirPadding::kValid) y->back() = kUnknownDim;
      return Status::Ok();
    }
    *shape = MakeFirShape(RowCount(x), length, taps, params.padding);
    y->back() = shape->outputs;
    return Status::Ok();
  }

  template <class T, class Shard>
  static void RunCpu(const Params&, const Shape& shape, const T* x, T* y,
                     const ComputeTypeOf<T>* taps, std::int64_t count, const Shard& shard) {
    shard(shape.rows * shape.outputs, count + 2, [&](std::int64_t begin, std::int64_t end) {
      FirFilterCpuRange(x, y, shape, taps, begin, end);
    });
  }
  template <class T>
  static Status Launch(GpuStream stream, const Params&, const Shape& shape, const T* x, T* y,
                       const TableView<ComputeTypeOf<T>>& taps) {
    return LaunchFirFilter<T>(stream, x, y, shape, taps);
  }
  template <class T>
  static Placement Place(std::int64_t count, SourceKind source, std::int64_t launch_elements) {
    return FirFilterPlacement<ComputeTypeOf<T>>(count, source, launch_elements);
  }
};

}  // namespace ops
}  // namespace constmem
