// SPDX-License-Identifier: Apache-2.0
// Example>ApplyGain in its three table forms: y[..., i] = x[..., i] * gains[row], one gain per row
// (the product of x's leading dimensions).
#include "adapter/table_adapter.h"
#include "apply_gain/apply_gain_launcher.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace {

absl::Status SameShapeAsX(tensorflow::shape_inference::InferenceContext* c) {
  tensorflow::shape_inference::ShapeHandle x;
  TF_RETURN_IF_ERROR(c->WithRankAtLeast(c->input(0), 1, &x));
  c->set_output(0, x);
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP("Example>ApplyGain")
    .Input("x: float")
    .Input("gains: float")
    .Output("y: float")
    .SetShapeFn(SameShapeAsX);
REGISTER_OP("Example>ApplyGainHostTable")
    .Input("x: float")
    .Input("gains: float")
    .Output("y: float")
    .SetShapeFn(SameShapeAsX);
REGISTER_OP("Example>ApplyGainAttr")
    .Input("x: float")
    .Output("y: float")
    .Attr("gains: list(int)")  // float32 bit patterns: exact, and eager execution passes them
    .SetShapeFn(SameShapeAsX);
