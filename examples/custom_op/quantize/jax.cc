// SPDX-License-Identifier: Apache-2.0
// Quantize for JAX: the XLA FFI handlers example_quantize and example_quantize_static, and
// the op registry from which constmem.jax.load_library registers them.
#include "quantize/quantize_op.h"
#include "xla_ffi/ffi_support.h"

CONSTMEM_EXPORT_FFI_HANDLERS(constmem_ffi_handler, example::QuantizeOp)
CONSTMEM_EXPORT_OP_REGISTRY(constmem_op_registry, example::QuantizeOp)
