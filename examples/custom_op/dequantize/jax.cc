// SPDX-License-Identifier: Apache-2.0
// Dequantize for JAX: the XLA FFI handlers example_dequantize and example_dequantize_static, and
// the op registry from which constmem.jax.load_library registers them.
#include "dequantize/dequantize_op.h"
#include "xla_ffi/ffi_support.h"

CONSTMEM_EXPORT_FFI_HANDLERS(constmem_ffi_handler, example::DequantizeOp)
CONSTMEM_EXPORT_OP_REGISTRY(constmem_op_registry, example::DequantizeOp)
