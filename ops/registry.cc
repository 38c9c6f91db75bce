// SPDX-License-Identifier: Apache-2.0
// What every framework's op library exports for its Python package: the op registry (each op's
// names, table rule, flags and attributes, from its description) and the core's counters.
#include "constmem/op_description.hpp"
#include "constmem_ops.h"

CONSTMEM_EXPORT_OP_REGISTRY(constmem_op_registry, CONSTMEM_OPS)
