// SPDX-License-Identifier: Apache-2.0
// Quantize for TensorFlow: Example>Quantize, ...HostTable and ...Attr, and the op registry that
// constmem.tensorflow.load_library reads.
#include "adapter/table_op.h"
#include "quantize/quantize_op.h"

CONSTMEM_REGISTER_TABLE_OP(example::QuantizeOp);
CONSTMEM_EXPORT_OP_REGISTRY(constmem_op_registry, example::QuantizeOp)
