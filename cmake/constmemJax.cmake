# SPDX-License-Identifier: Apache-2.0
# Building a JAX op library (XLA FFI handlers) on constmem, in constmem's own build and in a user's
# project (find_package(constmem CONFIG REQUIRED COMPONENTS jax) includes this file):
#
#   constmem_add_jax_op_library(_my_ops
#     SOURCES      my_op/jax.cc          # CONSTMEM_EXPORT_FFI_HANDLERS and the registry
#     CUDA_SOURCES my_op/my_gpu.cu       # nvcc, no framework header
#     INCLUDE_DIRS ${CMAKE_CURRENT_SOURCE_DIR})
#
# makes _my_ops.so with constmem::xla_ffi (`#include "xla_ffi/ffi_support.h"`: an op's FFI
# handlers from its description), XLA's FFI header from CONSTMEM_PYTHON's jaxlib
# (jax.ffi.include_dir(); no JAX library is linked: the FFI is a C ABI), and the CUDA code with a
# hidden static CUDA runtime. LIBRARIES and CUDA_LIBRARY as for constmem_add_torch_op_library.
# Sets CONSTMEM_JAX_VERSION. constmem.jax.load_library(path, descriptions) registers the result.
include_guard(GLOBAL)
include(${CMAKE_CURRENT_LIST_DIR}/constmemCommon.cmake)

if(NOT TARGET constmem::xla_ffi)
  add_library(constmem::xla_ffi INTERFACE IMPORTED GLOBAL)
  set_target_properties(constmem::xla_ffi PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES ${CONSTMEM_BINDINGS_DIR}
    INTERFACE_LINK_LIBRARIES constmem::core)
endif()

function(constmem_add_jax_op_library target)
  cmake_parse_arguments(ARG "" "CUDA_LIBRARY" "SOURCES;CUDA_SOURCES;INCLUDE_DIRS;LIBRARIES" ${ARGN})
  constmem_ask_python(jax_info jax
    "import jax, jax.ffi; print(jax.ffi.include_dir()); print(jax.__version__)")
  if(NOT jax_info)
    message(FATAL_ERROR "constmem: jax is not importable from ${CONSTMEM_PYTHON}; set CONSTMEM_PYTHON")
  endif()
  list(GET jax_info 0 jax_include)
  list(GET jax_info 1 jax_version)
  set(CONSTMEM_JAX_VERSION ${jax_version} PARENT_SCOPE)
  add_library(${target} SHARED ${ARG_SOURCES})
  set_target_properties(${target} PROPERTIES PREFIX "" OUTPUT_NAME ${target})
  constmem_hide_symbols(${target})
  target_include_directories(${target} PRIVATE ${ARG_INCLUDE_DIRS})
  target_include_directories(${target} SYSTEM PRIVATE ${jax_include})
  target_link_libraries(${target} PRIVATE constmem::xla_ffi ${ARG_LIBRARIES})
  constmem_link_cuda_code(${target} "${ARG_CUDA_LIBRARY}" "${ARG_CUDA_SOURCES}"
                          "${ARG_INCLUDE_DIRS}" "")
  constmem_portable_link(${target})  # a C interface: a static libstdc++
endfunction()
