// SPDX-License-Identifier: Apache-2.0
#include "binding.h"

#if CONSTMEM_WITH_GPU
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#endif

namespace constmem {
namespace torch_binding __attribute__((visibility("hidden"))) {

#if CONSTMEM_WITH_GPU
  GpuStream CurrentStream(const Tensor& tensor) {
    void* stream = nullptr;
    TORCH_ERROR_CODE_CHECK(aoti_torch_get_current_cuda_stream(tensor.get_device_index(), &stream));
    return static_cast<GpuStream>(stream);
  }
#endif

}  // namespace torch_binding
}  // namespace constmem
