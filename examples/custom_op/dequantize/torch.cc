// SPDX-License-Identifier: Apache-2.0
// Dequantize for PyTorch: the kernels of example::dequantize (three tensors) and
// example::dequantize_static (the tables as lists), and the op registry from which
// constmem.torch.load_library defines their schemas.
#include "dequantize/dequantize_op.h"
#include "pytorch/binding.h"

CONSTMEM_TORCH_KERNELS(example, example::DequantizeOp)
CONSTMEM_EXPORT_OP_REGISTRY(constmem_op_registry, example::DequantizeOp)
