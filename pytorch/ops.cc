// SPDX-License-Identifier: Apache-2.0
// constmem's ops for PyTorch: the kernels of every op of ops/ (the generated constmem_ops.h), as
// binding.h makes them from each op's description.
#include "constmem_ops.h"
#include "pytorch/binding.h"

CONSTMEM_TORCH_KERNELS(constmem, CONSTMEM_OPS)
