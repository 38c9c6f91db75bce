// SPDX-License-Identifier: Apache-2.0
// FirFilter under XLA: a custom call into its XLA FFI handlers (xla_ffi/, shared with JAX).
#include <string>

#include "adapter/xla/xla_lowering.h"
#include "fir_filter/fir_filter_functor.h"
#include "handlers.h"
#include "tensorflow/core/framework/node_def_util.h"

namespace constmem {
namespace ops {
namespace {

tf_adapter::XlaLowering FirFilterLowering() {
  tf_adapter::XlaLowering lowering = tf_adapter::MakeXlaLowering(
      "Constmem>FirFilter", "constmem_fir_filter", "taps", kFirMaxTaps, constmem_fir_filter_host,
      CONSTMEM_XLA_CUDA_HANDLER(constmem_fir_filter_cuda));
  lowering.rows_along_last_axis = true;
  lowering.describe = [](const tensorflow::NodeDef& node, tensorflow::DataType, std::int64_t taps,
                         std::vector<std::int64_t>* dims, std::string* attributes) {
    std::string padding;
    TF_RETURN_IF_ERROR(tensorflow::GetNodeAttr(node, "padding", &padding));
    if (dims->empty()) {
      return absl::InvalidArgumentError(
          "x must have rank 1 or more (the filter runs along the last axis); got a scalar");
    }
    const bool same = padding != "VALID";
    const FirShape shape =
        MakeFirShape(1, dims->back(), taps, same ? FirPadding::kSame : FirPadding::kValid);
    dims->back() = shape.outputs;
    *attributes = same ? "{same = 1 : i64}" : "{same = 0 : i64}";
    return absl::OkStatus();
  };
  return lowering;
}

}  // namespace
}  // namespace ops
}  // namespace constmem

CONSTMEM_REGISTER_XLA_LOWERING(fir_filter, constmem::ops::FirFilterLowering());
