# SPDX-License-Identifier: Apache-2.0
# Tests of CUDA kernels on a machine without a GPU: constmem/testing/emulated_gpu.hpp runs device
# code compiled by the host compiler on the CPU (docs/writing-an-op.md, section 2).
include_guard(GLOBAL)

# constmem_add_emulated_gpu_test(target source...): an executable whose sources include kernels
# (headers of device code with no CUDA runtime call), compiled by the host compiler with
# CONSTMEM_EMULATED_GPU, CUDA's headers (for float4, dim3 and the like) and constmem's. Link what
# else the test needs (GoogleTest, the op's CPU kernel for its reference) to `target`.
function(constmem_add_emulated_gpu_test target)
  find_package(CUDAToolkit REQUIRED)
  add_executable(${target} ${ARGN})
  target_compile_definitions(${target} PRIVATE CONSTMEM_EMULATED_GPU)
  # Device code's idioms: #pragma unroll, parameters only some architectures use.
  target_compile_options(${target} PRIVATE -Wno-unknown-pragmas -Wno-unused-parameter)
  target_include_directories(${target} PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  target_link_libraries(${target} PRIVATE constmem::core)
endfunction()
