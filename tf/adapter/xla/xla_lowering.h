// SPDX-License-Identifier: Apache-2.0
// XLA lowering for constmem ops, so that they compile under tf.function(jit_compile=True).
//
// An op becomes a typed-FFI custom call into the op's own CPU and GPU code: the kernels that run
// without XLA run with it, so that a compiled graph computes the same bits as an uncompiled one.
// (HLO has no fused multiply-add: a lowering to HLO arithmetic could not promise that.) Each op
// registers
//   - one tf2xla kernel for its three table forms: the custom call's operands are the data, then
//     each table in the op's order, an input's buffer or an attr's values as a constant;
//   - its FFI handlers (xla_ffi/ffi_support.h, the same JAX registers) for the platforms "Host"
//     (the CPU kernel) and "CUDA" (the GPU launcher on XLA's stream, the tables read from device
//     memory).
// Built when the headers tf2xla needs beyond TensorFlow's wheel are found (highwayhash and
// farmhash; on Debian, libhighwayhash-dev and libfarmhash-dev).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "adapter/kernel_registration.h"
#include "adapter/table_adapter.h"
#include "constmem/op_description.hpp"
#include "constmem/status.hpp"
#include "tensorflow/core/framework/node_def.pb.h"
#include "tensorflow/core/framework/node_def_util.h"
#include "tensorflow/core/framework/tensor_shape.h"
#include "tensorflow/core/framework/types.pb.h"
#include "xla/ffi/api/c_api.h"

// tf2xla's headers cost a translation unit about a minute to compile: only xla_lowering.cc
// includes them, and an op's lowering sees its node and data type instead of the kernel context.

namespace constmem {
namespace tf_adapter {

// What one op's lowering needs to know.
struct XlaLowering {
  std::string op;      // the op's base name, "Constmem>Polyval"
  std::string target;  // the FFI handlers' name, "constmem_polyval"
  // The op's tables in order: each an operand of the custom call, named by its attr in the Attr
  // form, of min_size to max_size entries of int32 (else of the data's compute type).
  std::vector<TableSpec> tables;
  bool elementwise = true;  // else the last axis is one unit, a row
  // Each result's dimensions from the data's `x` (and the tables' sizes), and the custom call's
  // attributes as an MLIR dictionary ("{}" for none), from the node's attrs and the data's type;
  // an error for shapes the op refuses. An op with several outputs gives one result each, a tuple
  // of the custom call.
  std::function<absl::Status(const tensorflow::NodeDef& node, tensorflow::DataType dtype,
                             const TableSizes& sizes, const std::vector<std::int64_t>& x,
                             std::vector<std::vector<std::int64_t>>* dims, std::string* attributes)>
      describe;
  XLA_FFI_Handler* host_handler = nullptr;
  XLA_FFI_Handler* cuda_handler = nullptr;  // null in builds without GPU kernels
};

// A node's attrs as a kernel's construction context offers them (an op's Params read these).
struct NodeAttrs {
  const tensorflow::NodeDef& node;
  template <class V>
  absl::Status GetAttr(absl::string_view name, V* value) const {
    return tensorflow::GetNodeAttr(node, name, value);
  }
};

// Registers the tf2xla kernels of the op's three forms and its FFI handlers, unless another copy
// of the op library in this process has (see kernel_registration.h). Returns whether it did.
bool RegisterXlaLowering(const XlaLowering& lowering);

}  // namespace tf_adapter
}  // namespace constmem
