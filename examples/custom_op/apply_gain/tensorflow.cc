// SPDX-License-Identifier: Apache-2.0
// ApplyGain for TensorFlow: Example>ApplyGain, ...HostTable and ...Attr, and the op registry that
// constmem.tensorflow.load_library reads.
#include "adapter/table_op.h"
#include "apply_gain/apply_gain_op.h"

CONSTMEM_REGISTER_TABLE_OP(example::ApplyGainOp);
CONSTMEM_EXPORT_OP_REGISTRY(constmem_op_registry, example::ApplyGainOp)
