// SPDX-License-Identifier: Apache-2.0
// FirFilter for TensorFlow: Constmem>FirFilter, ...HostTable and ...Attr (adapter/table_op.h).
#include <cstdint>
#include <string>
#include <vector>

#include "adapter/table_op.h"
#include "fir_filter/fir_filter_cpu.h"
#include "fir_filter/fir_filter_functor.h"
#include "fir_filter/fir_filter_launcher.h"
#if CONSTMEM_WITH_XLA
#include "handlers.h"  // the FFI handlers
#endif

namespace constmem {
namespace ops {

struct FirFilterTf : tf_adapter::TableOp {
  static constexpr tf_adapter::TableOpNames kNames{"Constmem>FirFilter", "x", "taps"};
  static constexpr tf_adapter::TableOpLimits kLimits{1, kFirMaxTaps, kFirMaxElements};
  static constexpr bool kElementwise = false;  // a row is filtered as a whole
  static constexpr const char* kDoc = R"doc(
A 1-D FIR filter along the last axis, as a correlation (what tf.nn.conv1d computes):
y[..., i] = sum_j xp[..., i + j] * taps[j], the taps applied in order with one fused multiply-add
each, xp the row with zero padding ((k-1)/2 zeros before it for SAME, none for VALID).
x: rank 1 or more, float32 or float64.
taps: vector of 1 to 2048 taps of x's dtype.
padding: SAME (as many outputs as samples) or VALID (n - k + 1 outputs, none if k > n).
)doc";
  static std::vector<std::string> Attrs() { return {"padding: {'SAME', 'VALID'}"}; }

  struct Params {
    FirPadding padding = FirPadding::kSame;
    template <class Attrs>
    absl::Status Read(const Attrs& attrs, tensorflow::DataType) {
      std::string name;
      TF_RETURN_IF_ERROR(attrs.GetAttr("padding", &name));
      padding = name == "VALID" ? FirPadding::kValid : FirPadding::kSame;
      return absl::OkStatus();
    }
  };
  using Shape = FirShape;

  static absl::Status OutputShape(const tensorflow::TensorShape& x, const Params& params,
                                  std::int64_t taps, Shape* shape, tensorflow::TensorShape* y) {
    if (x.dims() < 1) {
      return absl::InvalidArgumentError(
          "x must have rank 1 or more (the filter runs along the last axis); got a scalar");
    }
    std::int64_t rows = 1;
    for (int d = 0; d + 1 < x.dims(); ++d) rows *= x.dim_size(d);
    *shape = MakeFirShape(rows, x.dim_size(x.dims() - 1), taps, params.padding);
    *y = x;
    return y->SetDimWithStatus(x.dims() - 1, shape->outputs);
  }
  // y has x's shape with the last dimension n (SAME) or max(n - k + 1, 0) (VALID).
  static absl::Status InferOutput(tensorflow::shape_inference::InferenceContext* c,
                                  const Params& params, std::int64_t taps) {
    tensorflow::shape_inference::ShapeHandle x;
    TF_RETURN_IF_ERROR(c->WithRankAtLeast(c->input(0), 1, &x));
    tensorflow::shape_inference::DimensionHandle outputs = c->Dim(x, -1);
    if (params.padding == FirPadding::kValid) {
      if (taps < 0 || !c->ValueKnown(outputs)) {
        outputs = c->UnknownDim();
      } else {
        outputs = c->MakeDim(MakeFirShape(1, c->Value(outputs), taps, params.padding).outputs);
      }
    }
    tensorflow::shape_inference::ShapeHandle y;
    TF_RETURN_IF_ERROR(c->ReplaceDim(x, -1, outputs, &y));
    c->set_output(0, y);
    return absl::OkStatus();
  }
  static std::string XlaAttributes(const Params& params) {
    return params.padding == FirPadding::kSame ? "{same = 1 : i64}" : "{same = 0 : i64}";
  }

  template <class T, class Shard>
  static void RunCpu(const Params&, const Shape& shape, const T* x, T* y, const T* taps,
                     std::int64_t count, const Shard& shard) {
    shard(shape.rows * shape.outputs, count + 2, [&](std::int64_t begin, std::int64_t end) {
      FirFilterCpuRange(x, y, shape, taps, begin, end);
    });
  }
  template <class T>
  static Status Launch(GpuStream stream, const Params&, const Shape& shape, const T* x, T* y,
                       const TableView<T>& taps) {
    return LaunchFirFilter<T>(stream, x, y, shape, taps);
  }
  template <class T>
  static Placement Place(std::int64_t count, SourceKind source) {
    return FirFilterPlacement<T>(count, source);
  }
};

}  // namespace ops
}  // namespace constmem

CONSTMEM_REGISTER_TABLE_OP(constmem::ops::FirFilterTf);
CONSTMEM_REGISTER_TABLE_OP_XLA(constmem::ops::FirFilterTf, "constmem_fir_filter",
                               constmem_fir_filter_host,
                               CONSTMEM_XLA_CUDA_HANDLER(constmem_fir_filter_cuda));
