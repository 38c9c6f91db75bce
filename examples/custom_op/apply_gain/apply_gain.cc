// SPDX-License-Identifier: Apache-2.0
// Example>ApplyGain for TensorFlow, in its three table forms: y[..., i] = x[..., i] * gains[row],
// one gain per row (the product of x's leading dimensions). constmem's TableOp makes the op
// definitions, shape functions, kernels and their registration from this description.
#include <cstdint>

#include "adapter/table_op.h"
#include "apply_gain/apply_gain_launcher.h"

namespace example {

struct ApplyGain : constmem::tf_adapter::TableOp {
  static constexpr constmem::tf_adapter::TableOpNames kNames{"Example>ApplyGain", "x", "gains"};
  static constexpr constmem::tf_adapter::TableOpLimits kLimits{1, kMaxGains, std::int64_t{1} << 62};
  static constexpr bool kFloat64 = false;  // float32 data alone

  // x as a matrix: rows of row_length samples.
  struct Shape {
    std::int64_t rows = 1;
    std::int64_t row_length = 0;
  };
  static absl::Status OutputShape(const tensorflow::TensorShape& x, const Params&,
                                  std::int64_t gains, Shape* shape, tensorflow::TensorShape* y) {
    if (x.dims() < 1) return absl::InvalidArgumentError("x must have rank 1 or more");
    for (int d = 0; d + 1 < x.dims(); ++d) shape->rows *= x.dim_size(d);
    shape->row_length = x.dim_size(x.dims() - 1);
    if (gains != shape->rows) {
      return absl::InvalidArgumentError(
          absl::StrCat("gains must have one entry per row of x (", shape->rows, "); got ", gains));
    }
    *y = x;  // TableOp's default InferOutput says the same: y is shaped as x
    return absl::OkStatus();
  }

  // On TensorFlow's intra-op threads, in shards sized from the cost of an element.
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

CONSTMEM_REGISTER_TABLE_OP(example::ApplyGain);
