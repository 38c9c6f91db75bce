// SPDX-License-Identifier: Apache-2.0
// Polyval under XLA: a custom call into its XLA FFI handlers (xla_ffi/, shared with JAX).
#include "adapter/xla/xla_lowering.h"
#include "handlers.h"
#include "polyval/polyval_functor.h"

namespace constmem {
namespace ops {
namespace {

tf_adapter::XlaLowering PolyvalLowering() {
  tf_adapter::XlaLowering lowering = tf_adapter::MakeXlaLowering(
      "Constmem>Polyval", "constmem_polyval", "coeffs", kPolyvalMaxCoefficients,
      constmem_polyval_host, CONSTMEM_XLA_CUDA_HANDLER(constmem_polyval_cuda));
  return lowering;
}

}  // namespace
}  // namespace ops
}  // namespace constmem

CONSTMEM_REGISTER_XLA_LOWERING(polyval, constmem::ops::PolyvalLowering());
