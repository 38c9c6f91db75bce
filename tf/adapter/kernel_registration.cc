// SPDX-License-Identifier: Apache-2.0
#include "adapter/kernel_registration.h"

#include "tensorflow/core/platform/logging.h"

namespace constmem {
namespace tf_adapter {

bool KernelsAlreadyRegistered(const char* op_name) {
  if (tensorflow::GetRegisteredKernelsForOp(op_name).kernel_size() == 0) return false;
  LOG(WARNING) << "constmem: kernels of " << op_name
               << " are already registered by another copy of the op library in this process; "
                  "this copy registers none and the first one serves every call";
  return true;
}

}  // namespace tf_adapter
}  // namespace constmem
