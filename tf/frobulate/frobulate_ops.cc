// SPDX-License-Identifier: Apache-2.0
// Registration and shape functions of the Frobulate ops. The table reaches the kernel one of
// three ways, one op each, so that the graph says which copy happens:
//   Constmem>Frobulate           table is an ordinary input (on the GPU: read in place up to
//                                1,024 entries, else copied device-to-device)
//   Constmem>FrobulateHostTable  table is a host-memory input (staged through pinned memory)
//   Constmem>FrobulateAttr       table is an attr (uploaded once per device and content)
#include "adapter/table_adapter.h"
#include "frobulate/frobulate_functor.h"
#include "tensorflow/core/framework/common_shape_fns.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace constmem {
namespace ops {
namespace {

using tensorflow::shape_inference::InferenceContext;

absl::Status FrobulateShapeWithTableInput(InferenceContext* c) {
  TF_RETURN_IF_ERROR(tf_adapter::InferElementCount(c, 0, "data", kFrobulateMaxElements));
  TF_RETURN_IF_ERROR(tf_adapter::InferTableShape(c, 1, "table", kFrobulateMaxTableSize));
  c->set_output(0, c->input(0));
  return absl::OkStatus();
}

absl::Status FrobulateShapeWithTableAttr(InferenceContext* c) {
  TF_RETURN_IF_ERROR(tf_adapter::InferElementCount(c, 0, "data", kFrobulateMaxElements));
  std::vector<std::int32_t> table;
  TF_RETURN_IF_ERROR(tf_adapter::ReadAttrTable(c, "table", kFrobulateMaxTableSize, &table));
  c->set_output(0, c->input(0));
  return absl::OkStatus();
}

}  // namespace
}  // namespace ops
}  // namespace constmem

// The two ops whose table is an input differ only in where their GPU kernel takes it from.
#define CONSTMEM_REGISTER_FROBULATE_WITH_TABLE_INPUT(name) \
  REGISTER_OP(name)                                        \
      .Input("data: T")                                    \
      .Input("table: int32")                               \
      .Output("output: T")                                 \
      .Attr("T: {float, double}")                          \
      .SetShapeFn(constmem::ops::FrobulateShapeWithTableInput)

CONSTMEM_REGISTER_FROBULATE_WITH_TABLE_INPUT("Constmem>Frobulate").Doc(R"doc(
output[i] = (((data[i] + table[0]) + table[1]) + ... + table[n-1]), left to right in T.
On the GPU the table is read from __constant__ memory with warp-uniform indices.
data: any shape, float32 or float64.
table: int32 vector of 1 to 16384 entries.
)doc");

CONSTMEM_REGISTER_FROBULATE_WITH_TABLE_INPUT("Constmem>FrobulateHostTable").Doc(R"doc(
Frobulate whose GPU kernel takes the table in host memory: small tables become a by-value kernel
parameter, larger ones are staged through TensorFlow's pinned host allocator.
)doc");

REGISTER_OP("Constmem>FrobulateAttr")
    .Input("data: T")
    .Output("output: T")
    .Attr("T: {float, double}")
    .Attr("table: list(int)")
    .SetShapeFn(constmem::ops::FrobulateShapeWithTableAttr)
    .Doc(R"doc(
Frobulate with the table fixed per node as an attr: by value when small, otherwise uploaded at most
once per device and content into a constant bank.
)doc");
