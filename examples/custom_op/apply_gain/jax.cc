// SPDX-License-Identifier: Apache-2.0
// ApplyGain for JAX: the XLA FFI handlers example_apply_gain and example_apply_gain_static, and the
// op registry from which constmem.jax.load_library registers them.
#include "apply_gain/apply_gain_op.h"
#include "xla_ffi/ffi_support.h"

CONSTMEM_EXPORT_FFI_HANDLERS(constmem_ffi_handler, example::ApplyGainOp)
CONSTMEM_EXPORT_OP_REGISTRY(constmem_op_registry, example::ApplyGainOp)
