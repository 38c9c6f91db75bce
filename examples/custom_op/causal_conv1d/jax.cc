// SPDX-License-Identifier: Apache-2.0
// CausalConv1d for JAX: the XLA FFI handlers example_causal_conv1d and
// example_causal_conv1d_static, and the op registry from which constmem.jax.load_library
// registers them.
#include "causal_conv1d/causal_conv1d_op.h"
#include "xla_ffi/ffi_support.h"

CONSTMEM_EXPORT_FFI_HANDLERS(constmem_ffi_handler, example::CausalConv1dOp)
CONSTMEM_EXPORT_OP_REGISTRY(constmem_op_registry, example::CausalConv1dOp)
