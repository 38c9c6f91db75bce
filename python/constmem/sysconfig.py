# SPDX-License-Identifier: Apache-2.0
"""Where constmem's C++ parts are, in the style of `tf.sysconfig`, for building code against it.

    g++ $(python -c 'import constmem.sysconfig as s; print(" ".join(s.get_compile_flags()))') ...
    cmake -Dconstmem_DIR=$(python -c 'import constmem.sysconfig as s; print(s.get_cmake_dir())')

An installed package carries the core's headers and its CMake package config; a source checkout
points at the repository's `include/`.
"""

from __future__ import annotations

import os

from constmem import _libraries

_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def get_include() -> str:
    """The directory that holds `constmem/*.hpp` and `constmem/*.cuh`."""
    installed = os.path.join(_PACKAGE, "include")
    if os.path.isdir(os.path.join(installed, "constmem")):
        return installed
    return os.path.normpath(os.path.join(_PACKAGE, "..", "..", "include"))


def get_bindings_include() -> str:
    """The directory that holds `pytorch/binding.h` and `xla_ffi/ffi_support.h`.

    The headers that make an op's PyTorch kernels and XLA FFI handlers from its description.
    """
    installed = os.path.join(_PACKAGE, "share", "constmem")
    if os.path.exists(os.path.join(installed, "pytorch", "binding.h")):
        return installed
    return os.path.normpath(os.path.join(_PACKAGE, "..", ".."))


def torch_extension_args(with_cuda: bool = False) -> dict[str, list[str]]:
    """Keyword arguments for `torch.utils.cpp_extension.load` / `CppExtension` / `CUDAExtension`.

    The include directories of the core and of `pytorch/binding.h`, and the flags of PyTorch's
    stable ABI from 2.10 on (one build serves later releases); with_cuda adds the GPU defines and
    nvcc's flags for the op's `.cu` sources (`extra_cuda_cflags`).
    """
    defines = ["-DTORCH_TARGET_VERSION=0x020a000000000000"]
    if with_cuda:
        defines += ["-DCONSTMEM_WITH_GPU=1", "-DUSE_CUDA"]
    args = {
        "extra_include_paths": [get_include(), get_bindings_include()],
        "extra_cflags": ["-std=c++17", *defines, "-fvisibility=hidden"],
    }
    if with_cuda:
        args["extra_cuda_cflags"] = ["-std=c++17", *defines, "-Xcompiler=-fvisibility=hidden"]
    return args


def get_cmake_dir() -> str:
    """The directory of `constmemConfig.cmake`, for `find_package(constmem CONFIG)`."""
    path = os.path.join(_PACKAGE, "lib", "cmake", "constmem")
    if not os.path.exists(os.path.join(path, "constmemConfig.cmake")):
        raise FileNotFoundError(
            f"no CMake package config at {path}: this constmem is a source checkout; run "
            "`cmake --install build --component core --prefix PREFIX` and use "
            "PREFIX/lib/cmake/constmem, or `pip install .`"
        )
    return path


def get_lib(framework: str = "tensorflow") -> str:
    """The directory of `framework`'s op library (for `tf.load_op_library` or `TF_LoadLibrary`)."""
    return os.path.dirname(_libraries.library_path(framework))


def get_compile_flags() -> list[str]:
    """Compiler flags for code that includes the core (header-only: no link flags needed)."""
    return [f"-I{get_include()}", "-std=c++17"]


def get_link_flags() -> list[str]:
    """Linker flags for the core: none, it is header-only; CUDA code links CUDA's runtime."""
    return []
