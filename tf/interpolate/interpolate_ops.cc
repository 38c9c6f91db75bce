// SPDX-License-Identifier: Apache-2.0
// Registration and shape functions of the Interpolate ops, one per table form (as Polyval's):
//   Constmem>Interpolate           knots are an ordinary input
//   Constmem>InterpolateHostTable  knots are a host-memory input (staged through pinned memory)
//   Constmem>InterpolateAttr       knots are an attr (uploaded once per device and content)
// Each takes `bounds`, [lo, hi] as the IEEE-754 bit patterns of x's dtype (the encoding of table
// attrs: exact for float64, which a `float` attr is not).
#include <vector>

#include "adapter/table_adapter.h"
#include "interpolate/interpolate_functor.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace constmem {
namespace ops {
namespace {

using tensorflow::shape_inference::InferenceContext;

template <class T>
absl::Status CheckBoundsAndKnots(InferenceContext* c, std::int64_t knots, bool check_attr_knots) {
  std::vector<T> bounds;
  TF_RETURN_IF_ERROR(tf_adapter::ReadAttrTable(c, "bounds", 2, &bounds, 2));
  if (check_attr_knots) {
    std::vector<T> values;
    TF_RETURN_IF_ERROR(
        tf_adapter::ReadAttrTable(c, "knots", kInterpolateMaxKnots, &values, kInterpolateMinKnots));
    knots = static_cast<std::int64_t>(values.size());
  }
  // An unknown count (-1) is checked by the kernel.
  InterpolateGrid<T> grid{};
  return tf_adapter::ToTfStatus(
      MakeInterpolateGrid<T>(bounds[0], bounds[1], knots < 0 ? 2 : knots, &grid));
}

absl::Status InterpolateShape(InferenceContext* c, bool attr_knots) {
  TF_RETURN_IF_ERROR(tf_adapter::InferElementCount(c, 0, "x", kInterpolateMaxElements));
  std::int64_t knots = -1;
  if (!attr_knots) {
    TF_RETURN_IF_ERROR(
        tf_adapter::InferTableShape(c, 1, "knots", kInterpolateMaxKnots, kInterpolateMinKnots));
    if (c->RankKnown(c->input(1))) knots = c->Value(c->Dim(c->input(1), 0));
  }
  tensorflow::DataType dtype;
  TF_RETURN_IF_ERROR(c->GetAttr("T", &dtype));
  TF_RETURN_IF_ERROR(dtype == tensorflow::DT_FLOAT
                         ? CheckBoundsAndKnots<float>(c, knots, attr_knots)
                         : CheckBoundsAndKnots<double>(c, knots, attr_knots));
  c->set_output(0, c->input(0));
  return absl::OkStatus();
}

absl::Status InterpolateShapeWithInput(InferenceContext* c) { return InterpolateShape(c, false); }
absl::Status InterpolateShapeWithAttr(InferenceContext* c) { return InterpolateShape(c, true); }

}  // namespace
}  // namespace ops
}  // namespace constmem

#define CONSTMEM_REGISTER_INTERPOLATE_WITH_INPUT(name) \
  REGISTER_OP(name)                                    \
      .Input("x: T")                                   \
      .Input("knots: T")                               \
      .Output("y: T")                                  \
      .Attr("T: {float, double}")                      \
      .Attr("bounds: list(int)")                       \
      .SetShapeFn(constmem::ops::InterpolateShapeWithInput)

CONSTMEM_REGISTER_INTERPOLATE_WITH_INPUT("Constmem>Interpolate").Doc(R"doc(
Piecewise-linear interpolation into `knots`, n values at n equally spaced points over [lo, hi],
clamped at the ends: np.interp(x, np.linspace(lo, hi, n), knots), with
t = (x - lo) * ((n - 1) / (hi - lo)), i = floor(t), y = fma(t - i, knots[i+1] - knots[i], knots[i]).
x: any shape, float32 or float64.
knots: vector of 2 to 16384 values of x's dtype.
bounds: [lo, hi] as IEEE-754 bit patterns of x's dtype (float32 in the low 32 bits); lo < hi.
)doc");

CONSTMEM_REGISTER_INTERPOLATE_WITH_INPUT("Constmem>InterpolateHostTable").Doc(R"doc(
Interpolate whose GPU kernel takes the knots in host memory, staged through TensorFlow's pinned
host allocator.
)doc");

REGISTER_OP("Constmem>InterpolateAttr")
    .Input("x: T")
    .Output("y: T")
    .Attr("T: {float, double}")
    .Attr("knots: list(int)")
    .Attr("bounds: list(int)")
    .SetShapeFn(constmem::ops::InterpolateShapeWithAttr)
    .Doc(R"doc(
Interpolate with the knots fixed per node, uploaded at most once per device and content.
knots: the IEEE-754 bit patterns of the knots in x's dtype (float32 in the low 32 bits).
)doc");
