// SPDX-License-Identifier: Apache-2.0
// Dequantize for TensorFlow: Example>Dequantize, ...HostTable and ...Attr, and the op registry that
// constmem.tensorflow.load_library reads.
#include "adapter/table_op.h"
#include "dequantize/dequantize_op.h"

CONSTMEM_REGISTER_TABLE_OP(example::DequantizeOp);
CONSTMEM_EXPORT_OP_REGISTRY(constmem_op_registry, example::DequantizeOp)
