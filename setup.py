# SPDX-License-Identifier: Apache-2.0
"""Builds the op library with CMake before packaging (`pip install .`)."""

import os
import shutil
import subprocess
import sys
import tempfile

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildOpLibrary(build_py):
    def run(self):
        root = os.path.dirname(os.path.abspath(__file__))
        build_dir = os.environ.get("CONSTMEM_BUILD_DIR") or tempfile.mkdtemp(
            prefix="constmem-build-"
        )
        nvcc = shutil.which("nvcc") or (
            "/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None
        )
        args = [
            "cmake",
            "-S",
            root,
            "-B",
            build_dir,
            f"-DCONSTMEM_PYTHON={sys.executable}",
            "-DCONSTMEM_BUILD_TESTS=OFF",
            "-DCONSTMEM_BUILD_BENCH=OFF",
            f"-DCONSTMEM_WITH_GPU={'ON' if nvcc else 'OFF'}",
        ]
        if nvcc:
            args.append(f"-DCMAKE_CUDA_COMPILER={nvcc}")
        if os.environ.get("CONSTMEM_CUDA_ARCHS"):
            args.append(f"-DCMAKE_CUDA_ARCHITECTURES={os.environ['CONSTMEM_CUDA_ARCHS']}")
        subprocess.check_call(args)
        subprocess.check_call(
            [
                "cmake",
                "--build",
                build_dir,
                "-j",
                str(os.cpu_count() or 2),
                "--target",
                "_constmem_ops",
            ]
        )
        super().run()
        target = os.path.join(self.build_lib, "constmem", "_ops")
        os.makedirs(target, exist_ok=True)
        for name in ("_constmem_ops.so", "_constmem_ops.json"):
            shutil.copy2(os.path.join(build_dir, name), target)
        # The core's headers and CMake package config, for constmem.sysconfig and find_package.
        subprocess.check_call(
            [
                "cmake",
                "--install",
                build_dir,
                "--component",
                "core",
                "--prefix",
                os.path.join(self.build_lib, "constmem"),
            ]
        )


setup(cmdclass={"build_py": BuildOpLibrary})
