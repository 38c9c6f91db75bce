// SPDX-License-Identifier: Apache-2.0
// XLA lowering for constmem ops, so that they compile under tf.function(jit_compile=True).
//
// An op becomes a typed-FFI custom call into the op's own CPU and GPU code: the kernels that run
// without XLA run with it, so that a compiled graph computes the same bits as an uncompiled one.
// (HLO has no fused multiply-add: a lowering to HLO arithmetic could not promise that.) Each op
// registers
//   - one tf2xla kernel for its three table forms: the table is the custom call's second operand,
//     an input's buffer or the attr's values as a constant;
//   - its FFI handlers (xla_ffi/handlers.h, the same JAX registers) for the platforms "Host"
//     (the CPU kernel) and "CUDA" (the GPU launcher on XLA's stream, the table read from device
//     memory).
// Built when the headers tf2xla needs beyond TensorFlow's wheel are found (highwayhash and
// farmhash; on Debian, libhighwayhash-dev and libfarmhash-dev).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "adapter/table_adapter.h"
#include "constmem/status.hpp"
#include "tensorflow/core/framework/node_def.pb.h"
#include "tensorflow/core/framework/types.pb.h"
#include "xla/ffi/api/c_api.h"

// tf2xla's headers cost a translation unit about a minute to compile: only xla_lowering.cc
// includes them, and an op's lowering sees its node and data type instead of the kernel context.

namespace constmem {
namespace tf_adapter {

// What one op's lowering needs to know.
struct XlaLowering {
  std::string op;            // the op's base name, "Constmem>Polyval"
  std::string target;        // the FFI handlers' name, "constmem_polyval"
  const char* table_attr;    // the attr form's table attr
  std::int64_t max_table;    // table sizes allowed: 1 to max_table
  bool int32_table = false;  // Frobulate's table is int32; the others' are of the data's type
  bool rows_along_last_axis =
      false;  // the last axis is a row (FirFilter), not independent elements
  // The result's dimensions from the data's (and the table's size), and the custom call's
  // attributes as an MLIR dictionary ("{}" for none), from the node's attrs and the data's type;
  // an error for shapes the op refuses. Unset: the data's dimensions and no attributes, as for an
  // elementwise op.
  std::function<absl::Status(const tensorflow::NodeDef& node, tensorflow::DataType dtype,
                             std::int64_t table_size, std::vector<std::int64_t>* dims,
                             std::string* attributes)>
      describe;
  XLA_FFI_Handler* host_handler = nullptr;
  XLA_FFI_Handler* cuda_handler = nullptr;  // null in builds without GPU kernels
};

// An elementwise op's lowering (describe unset); other fields are set on the result.
XlaLowering MakeXlaLowering(std::string op, std::string target, const char* table_attr,
                            std::int64_t max_table, XLA_FFI_Handler* host_handler,
                            XLA_FFI_Handler* cuda_handler);

// Registers the tf2xla kernels of the op's three forms and its FFI handlers, unless another copy
// of the op library in this process has (see kernel_registration.h). Returns whether it did.
bool RegisterXlaLowering(const XlaLowering& lowering);

}  // namespace tf_adapter
}  // namespace constmem

// A CUDA handler where the library has GPU kernels, none elsewhere (the name need not exist).
#if CONSTMEM_WITH_GPU
#define CONSTMEM_XLA_CUDA_HANDLER(handler) handler
#else
#define CONSTMEM_XLA_CUDA_HANDLER(handler) nullptr
#endif

// Registers `lowering` (an XlaLowering) when the library loads.
#define CONSTMEM_REGISTER_XLA_LOWERING(name, lowering)     \
  [[maybe_unused]] static const bool constmem_xla_##name = \
      ::constmem::tf_adapter::RegisterXlaLowering(lowering)
