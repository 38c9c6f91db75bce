// SPDX-License-Identifier: Apache-2.0
// constmem's ops for TensorFlow: every op of ops/ (the generated constmem_ops.h), in its three
// table forms, with its XLA lowering where the library has one (adapter/table_op.h).
#include "adapter/table_op.h"
#include "constmem_ops.h"

CONSTMEM_REGISTER_TABLE_OP(CONSTMEM_OPS);
CONSTMEM_REGISTER_TABLE_OP_XLA(CONSTMEM_OPS);
