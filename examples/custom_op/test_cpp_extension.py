# SPDX-License-Identifier: Apache-2.0
"""ApplyGain's PyTorch library built the way PyTorch users build extensions:
`torch.utils.cpp_extension.load` with constmem.sysconfig's include directories and flags (the
CPU kernels; a CUDAExtension adds apply_gain_gpu.cu and `torch_extension_args(with_cuda=True)`),
in a fresh process (the CMake-built library defines the same `torch.ops.example` names)."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")
HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = """
import os, sys
import torch
import constmem.sysconfig, constmem.torch
from torch.utils import cpp_extension
from apply_gain import apply_gain as description

here, build = sys.argv[1], sys.argv[2]
args = constmem.sysconfig.torch_extension_args()
path = cpp_extension.load(
    "_apply_gain_torch_cpu", [os.path.join(here, "apply_gain", "torch.cc")],
    extra_include_paths=[*args["extra_include_paths"], here], extra_cflags=args["extra_cflags"],
    build_directory=build, is_python_module=False)
ops = constmem.torch.load_library(path, {"apply_gain": description})
assert ops.apply_gain(torch.ones(2, 3), [2.0, 3.0]).tolist() == [[2.0] * 3, [3.0] * 3]
print("ok")
"""


def test_load_builds_the_op_from_the_installed_package(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, HERE, str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stderr[-3000:]
