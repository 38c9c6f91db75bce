// SPDX-License-Identifier: Apache-2.0
// Quantize for PyTorch: the kernels of example::quantize (a tensor codebook) and
// example::quantize_static (the codebook as a list), and the op registry from which
// constmem.torch.load_library defines their schemas.
#include "pytorch/binding.h"
#include "quantize/quantize_op.h"

CONSTMEM_TORCH_KERNELS(example, example::QuantizeOp)
CONSTMEM_EXPORT_OP_REGISTRY(constmem_op_registry, example::QuantizeOp)
