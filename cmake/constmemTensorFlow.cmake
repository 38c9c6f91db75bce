# SPDX-License-Identifier: Apache-2.0
# Building a TensorFlow op library on constmem, in constmem's own build and in a user's project
# (find_package(constmem CONFIG REQUIRED COMPONENTS tf_adapter) includes this file):
#
#   constmem_add_tf_op_library(_my_ops
#     SOURCES     my_op/my_op.cc                          # g++, TensorFlow's headers
#     CUDA_SOURCES my_op/my_gpu.cu                        # nvcc, no TensorFlow header
#     INCLUDE_DIRS ${CMAKE_CURRENT_SOURCE_DIR})
#
# (CUDA_LIBRARY names an existing static library of CUDA code, adapter_gpu.cu included, instead of
# CUDA_SOURCES.)
#
# makes _my_ops.so with the TensorFlow adapter (constmem::tf_adapter: TableOp, TableOperand,
# GpuTableArgument, kernel registration) compiled in, TensorFlow's flags from CONSTMEM_PYTHON's
# TensorFlow, its headers as system headers, and, when CUDA is enabled, the CUDA code with a static CUDA runtime
# whose symbols are hidden (so that they never bind to the libcudart TensorFlow loaded). Without
# CUDA_SOURCES, or with CONSTMEM_WITH_GPU off, the library has CPU kernels only. The adapter's
# sources compile once for all the op libraries of a directory with the same kernels (CPU only,
# or GPU too), with TensorFlow's flags and the directory's options: flags added to one op library
# afterwards reach its own sources alone.
include_guard(GLOBAL)
include(${CMAKE_CURRENT_LIST_DIR}/constmemCommon.cmake)

# constmem::tf_adapter: the adapter's headers and sources, compiled into whatever links it (they
# need that target's TensorFlow flags), and the core.
if(NOT TARGET constmem::tf_adapter)
  file(GLOB _constmem_adapter_sources ${CONSTMEM_TF_ADAPTER_DIR}/adapter/*.cc)
  add_library(constmem::tf_adapter INTERFACE IMPORTED GLOBAL)
  set_target_properties(constmem::tf_adapter PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES ${CONSTMEM_TF_ADAPTER_DIR}
    INTERFACE_SOURCES "${_constmem_adapter_sources}"
    INTERFACE_LINK_LIBRARIES constmem::core)
endif()

# TensorFlow's compile and link flags, from the Python that has it: sets TF_INCLUDE_DIRS,
# TF_COMPILE_FLAGS (without the -I), TF_LINK_FLAGS and CONSTMEM_TF_VERSION in the caller's scope.
macro(constmem_find_tensorflow)
  if(NOT CONSTMEM_PYTHON)
    find_package(Python3 REQUIRED COMPONENTS Interpreter)
    set(CONSTMEM_PYTHON ${Python3_EXECUTABLE})
  endif()
  constmem_ask_python(_constmem_tf_flags tensorflow
    "import tensorflow as tf; print('|'.join(tf.sysconfig.get_compile_flags())); print('|'.join(tf.sysconfig.get_link_flags())); print(tf.__version__)")
  if(NOT _constmem_tf_flags)
    message(FATAL_ERROR "constmem: TensorFlow is not importable from ${CONSTMEM_PYTHON}; set CONSTMEM_PYTHON")
  endif()
  list(GET _constmem_tf_flags 0 TF_COMPILE_FLAGS)
  list(GET _constmem_tf_flags 1 TF_LINK_FLAGS)
  list(GET _constmem_tf_flags 2 CONSTMEM_TF_VERSION)
  string(REPLACE "|" ";" TF_COMPILE_FLAGS "${TF_COMPILE_FLAGS}")
  string(REPLACE "|" ";" TF_LINK_FLAGS "${TF_LINK_FLAGS}")
  list(FILTER TF_COMPILE_FLAGS EXCLUDE REGEX "^--std=")  # CMAKE_CXX_STANDARD sets it
  # TensorFlow's headers are system headers: their warnings are not ours to fix.
  set(TF_INCLUDE_DIRS ${TF_COMPILE_FLAGS})
  list(FILTER TF_INCLUDE_DIRS INCLUDE REGEX "^-I")
  list(TRANSFORM TF_INCLUDE_DIRS REPLACE "^-I" "")
  list(FILTER TF_COMPILE_FLAGS EXCLUDE REGEX "^-I")
endmacro()

# Sets `var` to the object library of the adapter's sources for this directory's op libraries
# with GPU kernels (`gpu` true) or CPU kernels only, made on first use (named after `target`, the
# first library that needs it). Most of the adapter's compile time is TensorFlow's headers: its
# sources compile as one, once for all the op libraries that link them.
function(_constmem_tf_adapter_objects var target gpu)
  set(kind cpu)
  if(gpu)
    set(kind gpu)
  endif()
  get_directory_property(objects _CONSTMEM_TF_ADAPTER_${kind})
  if(NOT objects)
    set(objects ${target}_adapter)
    get_target_property(sources constmem::tf_adapter INTERFACE_SOURCES)
    add_library(${objects} OBJECT ${sources})
    set_target_properties(${objects} PROPERTIES POSITION_INDEPENDENT_CODE ON
                                                UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 0)
    constmem_hide_symbols(${objects})
    target_include_directories(${objects} SYSTEM PRIVATE ${TF_INCLUDE_DIRS})
    target_compile_options(${objects} PRIVATE ${TF_COMPILE_FLAGS})
    # The adapter's headers (as constmem::tf_adapter gives them) and the core, for the library too.
    target_include_directories(${objects} SYSTEM PUBLIC ${CONSTMEM_TF_ADAPTER_DIR})
    target_link_libraries(${objects} PUBLIC constmem::core)
    if(gpu)
      target_compile_definitions(${objects} PRIVATE CONSTMEM_WITH_GPU=1)
    endif()
    set_property(DIRECTORY PROPERTY _CONSTMEM_TF_ADAPTER_${kind} ${objects})
  endif()
  set(${var} ${objects} PARENT_SCOPE)
endfunction()

function(constmem_add_tf_op_library target)
  cmake_parse_arguments(ARG "" "CUDA_LIBRARY" "SOURCES;CUDA_SOURCES;INCLUDE_DIRS" ${ARGN})
  if(NOT DEFINED TF_INCLUDE_DIRS)
    constmem_find_tensorflow()
  endif()
  add_library(${target} SHARED ${ARG_SOURCES})
  set_target_properties(${target} PROPERTIES PREFIX "" OUTPUT_NAME ${target})
  constmem_hide_symbols(${target})
  target_include_directories(${target} PRIVATE ${ARG_INCLUDE_DIRS})
  target_include_directories(${target} SYSTEM PRIVATE ${TF_INCLUDE_DIRS})
  target_compile_options(${target} PRIVATE ${TF_COMPILE_FLAGS})
  target_link_libraries(${target} PRIVATE ${TF_LINK_FLAGS})
  constmem_use_fast_linker(${target})
  # Sources join a group only where a UNITY_GROUP source property puts them in one.
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE GROUP)
  constmem_link_cuda_code(${target} "${ARG_CUDA_LIBRARY}" "${ARG_CUDA_SOURCES}"
                          "${ARG_INCLUDE_DIRS}" ${CONSTMEM_TF_ADAPTER_DIR}
                          ${CONSTMEM_TF_ADAPTER_DIR}/adapter/adapter_gpu.cu)
  _constmem_tf_adapter_objects(adapter ${target} "${_constmem_cuda_library}")
  target_link_libraries(${target} PRIVATE ${adapter})
  constmem_portable_link(${target} GLIBC_ONLY)  # C++ objects cross to TensorFlow
endfunction()
