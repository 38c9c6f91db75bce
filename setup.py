# SPDX-License-Identifier: Apache-2.0
"""Builds the op library with CMake before packaging (`pip install .`).

The build happens in a temporary directory (or $CONSTMEM_BUILD_DIR) and writes nothing into the
source tree; the wheel gets the op library, its build info, and the core's headers and CMake
package config.
"""

import os
import shutil
import subprocess
import sys
import tempfile

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution


def find_nvcc():
    found = shutil.which("nvcc")
    if found is None and os.path.exists("/usr/local/cuda/bin/nvcc"):
        found = "/usr/local/cuda/bin/nvcc"
    return found


class BuildOpLibrary(build_py):
    def run(self):
        given = os.environ.get("CONSTMEM_BUILD_DIR")
        if given:
            self.build_into(given)
        else:
            with tempfile.TemporaryDirectory(prefix="constmem-build-") as build_dir:
                self.build_into(build_dir)

    def build_into(self, build_dir):
        root = os.path.dirname(os.path.abspath(__file__))
        nvcc = find_nvcc()
        if nvcc is None:
            print("constmem: no nvcc found: building CPU kernels only", file=sys.stderr)
        args = [
            "cmake",
            "-S",
            root,
            "-B",
            build_dir,
            f"-DCONSTMEM_PYTHON={sys.executable}",
            "-DCONSTMEM_BUILD_TESTS=OFF",
            "-DCONSTMEM_BUILD_BENCH=OFF",
            "-DCONSTMEM_COPY_TO_PACKAGE=OFF",
            f"-DCONSTMEM_WITH_GPU={'ON' if nvcc else 'OFF'}",
        ]
        if nvcc:
            args.append(f"-DCMAKE_CUDA_COMPILER={nvcc}")
        if os.environ.get("CONSTMEM_CUDA_ARCHS"):
            args.append(f"-DCMAKE_CUDA_ARCHITECTURES={os.environ['CONSTMEM_CUDA_ARCHS']}")
        subprocess.check_call(args)
        jobs = str(os.cpu_count() or 2)
        subprocess.check_call(
            ["cmake", "--build", build_dir, "-j", jobs, "--target", "_constmem_ops"]
        )
        super().run()
        package = os.path.join(self.build_lib, "constmem")
        os.makedirs(os.path.join(package, "_ops"), exist_ok=True)
        for name in ("_constmem_ops.so", "_constmem_ops.json"):
            shutil.copy2(os.path.join(build_dir, name), os.path.join(package, "_ops"))
        # The core's headers, the TensorFlow adapter's sources and the CMake package config, for
        # constmem.sysconfig and find_package.
        for component in ("core", "tf_adapter"):
            subprocess.check_call(
                ["cmake", "--install", build_dir, "--component", component, "--prefix", package]
            )


class PlatformDistribution(Distribution):
    """The wheel holds a compiled library: tag it for this platform and Python, not as pure."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildOpLibrary}, distclass=PlatformDistribution)
