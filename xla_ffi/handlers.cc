// SPDX-License-Identifier: Apache-2.0
// The XLA FFI handlers of every op of ops/ (the generated constmem_ops.h), for JAX: the library
// exports constmem_ffi_handler(target, platform), from which constmem.jax registers each op that
// the library's op registry lists.
#include "constmem_ops.h"
#include "xla_ffi/ffi_support.h"

CONSTMEM_EXPORT_FFI_HANDLERS(constmem_ffi_handler, CONSTMEM_OPS)
