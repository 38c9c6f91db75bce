// SPDX-License-Identifier: Apache-2.0
// Registration and shape functions of the Polyval ops, one per table form (as Frobulate's):
//   Constmem>Polyval           coefficients are an ordinary input
//   Constmem>PolyvalHostTable  coefficients are a host-memory input (by value or pinned staging)
//   Constmem>PolyvalAttr       coefficients are an attr (uploaded once per device and content)
#include "adapter/table_adapter.h"
#include "polyval/polyval_functor.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace constmem {
namespace ops {
namespace {

using tensorflow::shape_inference::InferenceContext;

absl::Status PolyvalShapeWithInput(InferenceContext* c) {
  TF_RETURN_IF_ERROR(tf_adapter::InferElementCount(c, 0, "x", kPolyvalMaxElements));
  TF_RETURN_IF_ERROR(tf_adapter::InferTableShape(c, 1, "coeffs", kPolyvalMaxCoefficients));
  c->set_output(0, c->input(0));
  return absl::OkStatus();
}

template <class T>
absl::Status CheckAttrCoefficients(InferenceContext* c) {
  std::vector<T> coeffs;
  return tf_adapter::ReadAttrTable(c, "coeffs", kPolyvalMaxCoefficients, &coeffs);
}

absl::Status PolyvalShapeWithAttr(InferenceContext* c) {
  TF_RETURN_IF_ERROR(tf_adapter::InferElementCount(c, 0, "x", kPolyvalMaxElements));
  tensorflow::DataType dtype;
  TF_RETURN_IF_ERROR(c->GetAttr("T", &dtype));
  TF_RETURN_IF_ERROR(dtype == tensorflow::DT_FLOAT ? CheckAttrCoefficients<float>(c)
                                                   : CheckAttrCoefficients<double>(c));
  c->set_output(0, c->input(0));
  return absl::OkStatus();
}

}  // namespace
}  // namespace ops
}  // namespace constmem

#define CONSTMEM_REGISTER_POLYVAL_WITH_INPUT(name) \
  REGISTER_OP(name)                                \
      .Input("x: T")                               \
      .Input("coeffs: T")                          \
      .Output("y: T")                              \
      .Attr("T: {float, double}")                  \
      .SetShapeFn(constmem::ops::PolyvalShapeWithInput)

CONSTMEM_REGISTER_POLYVAL_WITH_INPUT("Constmem>Polyval").Doc(R"doc(
y = polyval(coeffs, x) by Horner's rule with one fused multiply-add per coefficient:
y = coeffs[0]; y = fma(y, x, coeffs[j]) for j = 1 .. n-1. Highest degree first, as np.polyval.
x: any shape, float32 or float64.
coeffs: vector of 1 to 4096 coefficients of x's dtype.
)doc");

CONSTMEM_REGISTER_POLYVAL_WITH_INPUT("Constmem>PolyvalHostTable").Doc(R"doc(
Polyval whose GPU kernel takes the coefficients in host memory: up to 4 KiB as a by-value kernel
parameter, more staged through TensorFlow's pinned host allocator.
)doc");

REGISTER_OP("Constmem>PolyvalAttr")
    .Input("x: T")
    .Output("y: T")
    .Attr("T: {float, double}")
    .Attr("coeffs: list(int)")
    .SetShapeFn(constmem::ops::PolyvalShapeWithAttr)
    .Doc(R"doc(
Polyval with the coefficients fixed per node: by value when small, otherwise uploaded at most once
per device and content into a constant bank.
coeffs: the IEEE-754 bit patterns of the coefficients in x's dtype (float32 in the low 32 bits),
  which keeps every value exact.
)doc");
