// SPDX-License-Identifier: Apache-2.0
// Registration and shape functions of the FirFilter ops, one per table form (as Frobulate's):
//   Constmem>FirFilter           taps are an ordinary input
//   Constmem>FirFilterHostTable  taps are a host-memory input (by value or pinned staging)
//   Constmem>FirFilterAttr       taps are an attr (uploaded once per device and content)
#include "adapter/table_adapter.h"
#include "fir_filter/fir_filter_functor.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace constmem {
namespace ops {
namespace {

using tensorflow::shape_inference::DimensionHandle;
using tensorflow::shape_inference::InferenceContext;
using tensorflow::shape_inference::ShapeHandle;

// y has x's shape with the last dimension n (SAME) or max(n - k + 1, 0) (VALID).
absl::Status SetOutputShape(InferenceContext* c, std::int64_t taps) {
  ShapeHandle x;
  TF_RETURN_IF_ERROR(c->WithRankAtLeast(c->input(0), 1, &x));
  TF_RETURN_IF_ERROR(tf_adapter::InferElementCount(c, 0, "x", kFirMaxElements));
  std::string padding;
  TF_RETURN_IF_ERROR(c->GetAttr("padding", &padding));
  DimensionHandle length = c->Dim(x, -1);
  DimensionHandle outputs = length;
  if (padding == "VALID") {
    if (taps < 0 || !c->ValueKnown(length)) {
      outputs = c->UnknownDim();
    } else {
      const std::int64_t n = c->Value(length);
      outputs = c->MakeDim(n >= taps ? n - taps + 1 : 0);
    }
  }
  ShapeHandle y;
  TF_RETURN_IF_ERROR(c->ReplaceDim(x, -1, outputs, &y));
  c->set_output(0, y);
  return absl::OkStatus();
}

absl::Status FirShapeWithInput(InferenceContext* c) {
  TF_RETURN_IF_ERROR(tf_adapter::InferTableShape(c, 1, "taps", kFirMaxTaps));
  ShapeHandle taps = c->input(1);
  const bool known = c->RankKnown(taps) && c->ValueKnown(c->Dim(taps, 0));
  return SetOutputShape(c, known ? c->Value(c->Dim(taps, 0)) : -1);
}

template <class T>
absl::Status AttrTapCount(InferenceContext* c, std::int64_t* count) {
  std::vector<T> taps;
  TF_RETURN_IF_ERROR(tf_adapter::ReadAttrTable(c, "taps", kFirMaxTaps, &taps));
  *count = static_cast<std::int64_t>(taps.size());
  return absl::OkStatus();
}

absl::Status FirShapeWithAttr(InferenceContext* c) {
  tensorflow::DataType dtype;
  TF_RETURN_IF_ERROR(c->GetAttr("T", &dtype));
  std::int64_t taps = 0;
  TF_RETURN_IF_ERROR(dtype == tensorflow::DT_FLOAT ? AttrTapCount<float>(c, &taps)
                                                   : AttrTapCount<double>(c, &taps));
  return SetOutputShape(c, taps);
}

}  // namespace
}  // namespace ops
}  // namespace constmem

#define CONSTMEM_REGISTER_FIR_WITH_INPUT(name) \
  REGISTER_OP(name)                            \
      .Input("x: T")                           \
      .Input("taps: T")                        \
      .Output("y: T")                          \
      .Attr("T: {float, double}")              \
      .Attr("padding: {'SAME', 'VALID'}")      \
      .SetShapeFn(constmem::ops::FirShapeWithInput)

CONSTMEM_REGISTER_FIR_WITH_INPUT("Constmem>FirFilter").Doc(R"doc(
A 1-D FIR filter along the last axis, as a correlation (what tf.nn.conv1d computes):
y[..., i] = sum_j xp[..., i + j] * taps[j], the taps applied in order with one fused multiply-add
each, xp the row with zero padding ((k-1)/2 zeros before it for SAME, none for VALID).
x: rank 1 or more, float32 or float64.
taps: vector of 1 to 2048 taps of x's dtype.
padding: SAME (as many outputs as samples) or VALID (n - k + 1 outputs, none if k > n).
)doc");

CONSTMEM_REGISTER_FIR_WITH_INPUT("Constmem>FirFilterHostTable").Doc(R"doc(
FirFilter whose GPU kernel takes the taps in host memory: up to 4 KiB as a by-value kernel
parameter, more staged through TensorFlow's pinned host allocator.
)doc");

REGISTER_OP("Constmem>FirFilterAttr")
    .Input("x: T")
    .Output("y: T")
    .Attr("T: {float, double}")
    .Attr("padding: {'SAME', 'VALID'}")
    .Attr("taps: list(int)")
    .SetShapeFn(constmem::ops::FirShapeWithAttr)
    .Doc(R"doc(
FirFilter with the taps fixed per node: by value when small, otherwise uploaded at most once per
device and content into a constant bank.
taps: the IEEE-754 bit patterns of the taps in x's dtype (float32 in the low 32 bits).
)doc");
