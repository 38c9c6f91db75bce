// SPDX-License-Identifier: Apache-2.0
// CausalConv1d for TensorFlow: Example>CausalConv1d, ...HostTable and ...Attr, and the op registry
// that constmem.tensorflow.load_library reads.
#include "adapter/table_op.h"
#include "causal_conv1d/causal_conv1d_op.h"

CONSTMEM_REGISTER_TABLE_OP(example::CausalConv1dOp);
CONSTMEM_EXPORT_OP_REGISTRY(constmem_op_registry, example::CausalConv1dOp)
