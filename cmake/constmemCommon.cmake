# SPDX-License-Identifier: Apache-2.0
# What building an op library on constmem needs in every framework, in constmem's own build and in
# a user's project (each framework's file includes this one).
include_guard(GLOBAL)
# constmem_portable_link, which every constmem_add_*_op_library applies where
# CONSTMEM_PORTABLE_LINK is on (-DCONSTMEM_PORTABLE_LINK=ON: libraries that load on glibc 2.28).
include(${CMAKE_CURRENT_LIST_DIR}/constmemPortable.cmake)

set(CONSTMEM_PYTHON "" CACHE FILEPATH "Python with the frameworks, for their flags and headers")
if(NOT CONSTMEM_PYTHON)
  find_package(Python3 COMPONENTS Interpreter)
  if(Python3_EXECUTABLE)
    set(CONSTMEM_PYTHON ${Python3_EXECUTABLE})
  endif()
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

# Hides every symbol of `target` but those its code marks for export (CONSTMEM_EXPORT_OP_REGISTRY,
# CONSTMEM_EXPORT_FFI_HANDLERS): the frameworks reach the rest through the registrations that run
# when the library loads, and nothing else in the process binds to the op's own symbols.
function(constmem_hide_symbols target)
  set_target_properties(${target} PROPERTIES CXX_VISIBILITY_PRESET hidden
                                             CUDA_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
endfunction()

# Links `target` with its CUDA code: `cuda_library` (a static library of it), or one made from
# `cuda_sources` (nvcc, no framework header; with `include_dirs`, `extra_include_dir` and the
# further sources after them). The static CUDA runtime's symbols stay hidden, so that they never
# bind to the libcudart a framework loaded. Without CUDA code, or with CONSTMEM_WITH_GPU off, the
# target has CPU kernels only.
function(constmem_link_cuda_code target cuda_library cuda_sources include_dirs extra_include_dir)
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(NOT cuda_library AND cuda_sources AND "CUDA" IN_LIST languages
     AND (NOT DEFINED CONSTMEM_WITH_GPU OR CONSTMEM_WITH_GPU))
    find_package(CUDAToolkit REQUIRED)
    set(cuda_library ${target}_cuda)
    add_library(${cuda_library} STATIC ${cuda_sources} ${ARGN})
    set_target_properties(${cuda_library} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    constmem_hide_symbols(${cuda_library})
    target_include_directories(${cuda_library} PUBLIC ${extra_include_dir} ${include_dirs})
    target_link_libraries(${cuda_library} PUBLIC constmem::core CUDA::cudart_static)
  endif()
  if(cuda_library)
    target_compile_definitions(${target} PRIVATE CONSTMEM_WITH_GPU=1)
    target_link_libraries(${target} PRIVATE ${cuda_library} -Wl,--exclude-libs,ALL -Wl,-Bsymbolic)
  else()
    message(STATUS "constmem: ${target} has CPU kernels only (no CUDA language enabled, or no CUDA sources)")
  endif()
  set(_constmem_cuda_library "${cuda_library}" PARENT_SCOPE)
endfunction()
