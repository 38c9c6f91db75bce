// SPDX-License-Identifier: Apache-2.0
// CausalConv1d for PyTorch: the kernels of example::causal_conv1d (three tensors) and
// example::causal_conv1d_static (weight and bias as lists), and the op registry from which
// constmem.torch.load_library defines their schemas.
#include "causal_conv1d/causal_conv1d_op.h"
#include "pytorch/binding.h"

CONSTMEM_TORCH_KERNELS(example, example::CausalConv1dOp)
CONSTMEM_EXPORT_OP_REGISTRY(constmem_op_registry, example::CausalConv1dOp)
