# SPDX-License-Identifier: Apache-2.0
# Building a PyTorch op library on constmem, in constmem's own build and in a user's project
# (find_package(constmem CONFIG REQUIRED COMPONENTS torch) includes this file):
#
#   constmem_add_torch_op_library(_my_ops
#     SOURCES      my_op/torch.cc        # CONSTMEM_TORCH_KERNELS(my, my::ScaleOp) and the registry
#     CUDA_SOURCES my_op/my_gpu.cu       # nvcc, no framework header
#     INCLUDE_DIRS ${CMAKE_CURRENT_SOURCE_DIR})
#
# makes _my_ops.so on PyTorch's stable ABI (one build serves torch 2.10 and later) with
# constmem::torch_binding (`#include "pytorch/binding.h"`: an op's kernels from its description),
# the torch of CONSTMEM_PYTHON, and the CUDA code with a hidden static CUDA runtime. LIBRARIES
# links more (static) libraries; CUDA_LIBRARY names an existing static library of CUDA code instead
# of CUDA_SOURCES. Sets CONSTMEM_TORCH_VERSION. constmem.torch.load_library(path, descriptions)
# loads the result.
include_guard(GLOBAL)
include(${CMAKE_CURRENT_LIST_DIR}/constmemCommon.cmake)

if(NOT TARGET constmem::torch_binding)
  add_library(constmem::torch_binding INTERFACE IMPORTED GLOBAL)
  set_target_properties(constmem::torch_binding PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES ${CONSTMEM_BINDINGS_DIR}
    INTERFACE_LINK_LIBRARIES constmem::core)
endif()

function(constmem_add_torch_op_library target)
  cmake_parse_arguments(ARG "" "CUDA_LIBRARY" "SOURCES;CUDA_SOURCES;INCLUDE_DIRS;LIBRARIES" ${ARGN})
  constmem_ask_python(torch_info torch
    "import os, torch; print(os.path.dirname(torch.__file__)); print(torch.__version__)")
  if(NOT torch_info)
    message(FATAL_ERROR "constmem: torch is not importable from ${CONSTMEM_PYTHON}; set CONSTMEM_PYTHON")
  endif()
  list(GET torch_info 0 torch_dir)
  list(GET torch_info 1 torch_version)
  set(CONSTMEM_TORCH_VERSION ${torch_version} PARENT_SCOPE)
  add_library(${target} SHARED ${ARG_SOURCES})
  set_target_properties(${target} PROPERTIES PREFIX "" OUTPUT_NAME ${target})
  constmem_hide_symbols(${target})
  target_include_directories(${target} PRIVATE ${ARG_INCLUDE_DIRS})
  target_include_directories(${target} SYSTEM PRIVATE ${torch_dir}/include)
  # 2.10 is the oldest release whose stable ABI has everything the binding uses.
  target_compile_definitions(${target} PRIVATE TORCH_TARGET_VERSION=0x020a000000000000)
  target_link_libraries(${target} PRIVATE constmem::torch_binding ${ARG_LIBRARIES}
                                          ${torch_dir}/lib/libtorch_cpu.so ${torch_dir}/lib/libc10.so)
  constmem_link_cuda_code(${target} "${ARG_CUDA_LIBRARY}" "${ARG_CUDA_SOURCES}"
                          "${ARG_INCLUDE_DIRS}" "")
  if(_constmem_cuda_library)
    # USE_CUDA declares the shim's current-stream call.
    target_compile_definitions(${target} PRIVATE USE_CUDA)
    target_link_libraries(${target} PRIVATE ${torch_dir}/lib/libtorch_cuda.so)
  endif()
  constmem_portable_link(${target})  # a C interface: a static libstdc++
endfunction()
