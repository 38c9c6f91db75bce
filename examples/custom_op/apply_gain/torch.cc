// SPDX-License-Identifier: Apache-2.0
// ApplyGain for PyTorch: the kernels of example::apply_gain and example::apply_gain_static, and
// the op registry from which constmem.torch.load_library defines their schemas.
#include "apply_gain/apply_gain_op.h"
#include "pytorch/binding.h"

CONSTMEM_TORCH_KERNELS(example, example::ApplyGainOp)
CONSTMEM_EXPORT_OP_REGISTRY(constmem_op_registry, example::ApplyGainOp)
