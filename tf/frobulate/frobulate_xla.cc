// SPDX-License-Identifier: Apache-2.0
// Frobulate under XLA: a custom call into its XLA FFI handlers (xla_ffi/, shared with JAX).
#include "adapter/xla/xla_lowering.h"
#include "frobulate/frobulate_functor.h"
#include "handlers.h"

namespace constmem {
namespace ops {
namespace {

tf_adapter::XlaLowering FrobulateLowering() {
  tf_adapter::XlaLowering lowering = tf_adapter::MakeXlaLowering(
      "Constmem>Frobulate", "constmem_frobulate", "table", kFrobulateMaxTableSize,
      constmem_frobulate_host, CONSTMEM_XLA_CUDA_HANDLER(constmem_frobulate_cuda));
  lowering.int32_table = true;
  return lowering;
}

}  // namespace
}  // namespace ops
}  // namespace constmem

CONSTMEM_REGISTER_XLA_LOWERING(frobulate, constmem::ops::FrobulateLowering());
