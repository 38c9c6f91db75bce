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
# CUDA_SOURCES, or with CONSTMEM_WITH_GPU off, the library has CPU kernels only.
include_guard(GLOBAL)

set(CONSTMEM_PYTHON "" CACHE FILEPATH "Python with TensorFlow, for TensorFlow's compile and link flags")

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

# Sets `var` to the lines `code` prints in CONSTMEM_PYTHON, as a list (empty if it fails), which
# the cache keeps
# for as long as that Python has the same version of `distribution`: importing a framework
# takes seconds, and every configure asks.
function(constmem_ask_python var distribution code)
  execute_process(COMMAND ${CONSTMEM_PYTHON} -c
                          "import importlib.metadata as m; print(m.version('${distribution}'))"
                  OUTPUT_VARIABLE version OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE no_version ERROR_QUIET)
  string(MD5 key "${CONSTMEM_PYTHON}|${distribution}|${version}|${code}")
  if(NOT no_version AND DEFINED CACHE{_CONSTMEM_ANSWER_${key}})
    set(${var} "$CACHE{_CONSTMEM_ANSWER_${key}}" PARENT_SCOPE)
    return()
  endif()
  execute_process(COMMAND ${CONSTMEM_PYTHON} -c "${code}" OUTPUT_VARIABLE answer
                  OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE failed ERROR_QUIET)
  string(REPLACE "\n" ";" answer "${answer}")
  if(failed)
    set(answer "")
  elseif(NOT no_version)
    set(_CONSTMEM_ANSWER_${key} "${answer}" CACHE INTERNAL "")
  endif()
  set(${var} "${answer}" PARENT_SCOPE)
endfunction()

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

# Links `target` with lld or gold where the compiler can use them: GNU ld takes ~15 s to link
# against TensorFlow's libraries, gold ~3 s and lld ~2 s. CONSTMEM_LINKER chooses (empty: ld).
function(constmem_use_fast_linker target)
  if(NOT DEFINED CACHE{CONSTMEM_LINKER})
    include(CheckLinkerFlag)
    set(linker "")
    foreach(candidate lld gold)
      check_linker_flag(CXX -fuse-ld=${candidate} CONSTMEM_LINKER_${candidate}_WORKS)
      if(CONSTMEM_LINKER_${candidate}_WORKS)
        set(linker ${candidate})
        break()
      endif()
    endforeach()
    set(CONSTMEM_LINKER "${linker}" CACHE STRING "Linker for what links TensorFlow (lld, gold; empty: the default)")
  endif()
  if(CONSTMEM_LINKER)
    target_link_options(${target} PRIVATE -fuse-ld=${CONSTMEM_LINKER})
  endif()
endfunction()

function(constmem_add_tf_op_library target)
  cmake_parse_arguments(ARG "" "CUDA_LIBRARY" "SOURCES;CUDA_SOURCES;INCLUDE_DIRS" ${ARGN})
  if(NOT DEFINED TF_INCLUDE_DIRS)
    constmem_find_tensorflow()
  endif()
  add_library(${target} SHARED ${ARG_SOURCES})
  set_target_properties(${target} PROPERTIES PREFIX "" OUTPUT_NAME ${target})
  target_include_directories(${target} PRIVATE ${ARG_INCLUDE_DIRS})
  target_include_directories(${target} SYSTEM PRIVATE ${TF_INCLUDE_DIRS})
  target_compile_options(${target} PRIVATE ${TF_COMPILE_FLAGS})
  target_link_libraries(${target} PRIVATE constmem::tf_adapter ${TF_LINK_FLAGS})
  constmem_use_fast_linker(${target})
  # The adapter's sources compile as one: most of each one's time is TensorFlow's headers. (Other
  # sources join a group only where a UNITY_GROUP source property puts them in one.)
  get_target_property(adapter_sources constmem::tf_adapter INTERFACE_SOURCES)
  set_source_files_properties(${adapter_sources} PROPERTIES UNITY_GROUP constmem_tf_adapter)
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE GROUP)
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  set(cuda_library ${ARG_CUDA_LIBRARY})
  if(NOT cuda_library AND ARG_CUDA_SOURCES AND "CUDA" IN_LIST languages
     AND (NOT DEFINED CONSTMEM_WITH_GPU OR CONSTMEM_WITH_GPU))
    find_package(CUDAToolkit REQUIRED)
    set(cuda_library ${target}_cuda)
    add_library(${cuda_library} STATIC ${ARG_CUDA_SOURCES}
                                       ${CONSTMEM_TF_ADAPTER_DIR}/adapter/adapter_gpu.cu)
    set_target_properties(${cuda_library} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    target_include_directories(${cuda_library} PUBLIC ${CONSTMEM_TF_ADAPTER_DIR} ${ARG_INCLUDE_DIRS})
    target_link_libraries(${cuda_library} PUBLIC constmem::core CUDA::cudart_static)
  endif()
  if(cuda_library)
    target_compile_definitions(${target} PRIVATE CONSTMEM_WITH_GPU=1)
    target_link_libraries(${target} PRIVATE ${cuda_library} -Wl,--exclude-libs,ALL -Wl,-Bsymbolic)
  else()
    message(STATUS "constmem: ${target} has CPU kernels only (no CUDA language enabled, or no CUDA sources)")
  endif()
endfunction()
