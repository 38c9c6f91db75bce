# SPDX-License-Identifier: Apache-2.0
# CONSTMEM_PORTABLE_LINK (the release build's): op libraries that load on glibc 2.28 and later
# (manylinux_2_28) although built on a newer glibc and gcc, by link-time measures alone, without
# another sysroot:
#
#   constmem_portable_link(target)             # glibc fixes and a static libstdc++
#   constmem_portable_link(target GLIBC_ONLY)  # glibc fixes, the shared libstdc++ of gcc >= 7
#
# The glibc fixes: every function glibc 2.34 gave a new version (libdl's, libpthread's, librt's,
# which the static CUDA runtime calls) is wrapped (-Wl,--wrap) to call its oldest version, and
# __libc_single_threaded (GLIBC_2.32) gets a hidden definition of our own, and the few functions
# with no version older than 2.28 that a static libstdc++ calls are done with older ones
# (cmake/glibc_compat.c). A static libstdc++ removes the GLIBCXX_/CXXABI_ versions of the
# compiler's libstdc++.so; it suits only a library whose interface is C (PyTorch's stable ABI,
# XLA's FFI): one that passes C++ objects to a framework (TensorFlow's op library) keeps the
# libstdc++ the framework loads. Its symbols stay hidden (--exclude-libs,ALL), so that nothing else
# binds to them. libgcc stays shared (libgcc_s.so.1, GCC_3.x versions): gcc 12's static unwinder
# calls _dl_find_object (GLIBC_2.35), which has no older version. GLIBC_ONLY keeps the shared
# libstdc++ and makes the library need none newer than TensorFlow's wheel does (GLIBCXX_3.4.22,
# CXXABI_1.3.11): the few functions the new gcc's headers call with a newer version are wrapped
# too, by their mangled names, and done with older ones (cmake/glibcxx_compat.cc).
include_guard(GLOBAL)

if(CONSTMEM_PORTABLE_LINK)
  if(NOT CMAKE_SYSTEM_NAME STREQUAL "Linux" OR NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    message(FATAL_ERROR "constmem: CONSTMEM_PORTABLE_LINK needs Linux and GCC")
  endif()
  enable_language(C)
  set(CONSTMEM_GLIBC_COMPAT_SOURCE ${CMAKE_CURRENT_LIST_DIR}/glibc_compat.c)
  add_library(constmem_glibc_compat OBJECT ${CONSTMEM_GLIBC_COMPAT_SOURCE})
  set_target_properties(constmem_glibc_compat PROPERTIES POSITION_INDEPENDENT_CODE ON
                                                         C_VISIBILITY_PRESET hidden)
  # The wrapped functions: the source's CONSTMEM_COMPAT(version, type, name, ...) lines and its
  # definitions of __wrap_<name> (a configure reads them again when it changes).
  file(STRINGS ${CONSTMEM_GLIBC_COMPAT_SOURCE} lines
       REGEX "^(CONSTMEM_COMPAT\\(|CONSTMEM_HIDDEN .* __wrap_[A-Za-z_0-9]+\\(.*\\) {)")
  set(CONSTMEM_GLIBC_WRAP_OPTIONS "")
  foreach(line ${lines})
    if(line MATCHES "^CONSTMEM_COMPAT\\([^,]+,[^,]+, *([A-Za-z_0-9]+),")
      list(APPEND CONSTMEM_GLIBC_WRAP_OPTIONS "LINKER:--wrap=${CMAKE_MATCH_1}")
    elseif(line MATCHES " __wrap_([A-Za-z_0-9]+)\\(")
      list(APPEND CONSTMEM_GLIBC_WRAP_OPTIONS "LINKER:--wrap=${CMAKE_MATCH_1}")
    endif()
  endforeach()
  # GLIBC_ONLY's libstdc++ functions: the source's CONSTMEM_WRAP(name, ...) definitions.
  set(CONSTMEM_GLIBCXX_COMPAT_SOURCE ${CMAKE_CURRENT_LIST_DIR}/glibcxx_compat.cc)
  add_library(constmem_glibcxx_compat OBJECT ${CONSTMEM_GLIBCXX_COMPAT_SOURCE})
  set_target_properties(constmem_glibcxx_compat PROPERTIES POSITION_INDEPENDENT_CODE ON
                                                           CXX_VISIBILITY_PRESET hidden)
  file(STRINGS ${CONSTMEM_GLIBCXX_COMPAT_SOURCE} lines REGEX "^CONSTMEM_WRAP\\([A-Za-z_0-9]+,")
  list(TRANSFORM lines REPLACE "^CONSTMEM_WRAP\\(([A-Za-z_0-9]+),.*" "LINKER:--wrap=\\1"
       OUTPUT_VARIABLE CONSTMEM_GLIBCXX_WRAP_OPTIONS)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CONSTMEM_GLIBC_COMPAT_SOURCE}
                                                                 ${CONSTMEM_GLIBCXX_COMPAT_SOURCE})
endif()

function(constmem_portable_link target)
  cmake_parse_arguments(ARG "GLIBC_ONLY" "" "" ${ARGN})
  if(NOT CONSTMEM_PORTABLE_LINK)
    return()
  endif()
  target_link_libraries(${target} PRIVATE constmem_glibc_compat)
  # GNU ld, whatever constmem_use_fast_linker chose: lld (14) keeps each wrapped function's new
  # version among the imports although nothing calls it.
  target_link_options(${target} PRIVATE -fuse-ld=bfd ${CONSTMEM_GLIBC_WRAP_OPTIONS}
                                        LINKER:--exclude-libs,ALL)
  # Before glibc 2.34 the wrapped functions' oldest versions are libdl's, libpthread's and
  # librt's (on newer glibc these are empty): the library names them, whatever the process loaded.
  target_link_libraries(${target} PRIVATE -Wl,--no-as-needed -l:libdl.so.2 -l:libpthread.so.0
                                          -l:librt.so.1)
  if(ARG_GLIBC_ONLY)
    target_link_libraries(${target} PRIVATE constmem_glibcxx_compat)
    target_link_options(${target} PRIVATE ${CONSTMEM_GLIBCXX_WRAP_OPTIONS})
  else()
    target_link_options(${target} PRIVATE -static-libstdc++)
  endif()
endfunction()
