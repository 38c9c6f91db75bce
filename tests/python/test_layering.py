# SPDX-License-Identifier: Apache-2.0
"""One direction of dependency: `import constmem` imports no framework, each framework's
subpackage only its own, and no op kernel or core header includes a framework."""

import importlib.util
import os
import re

import pytest
from subprocesses import ROOT, run_python

FRAMEWORKS = ("tensorflow", "torch", "jax", "keras")


def imported_frameworks(*statements):
    """The frameworks imported after each statement, run in turn in one fresh process."""
    report = f"print(sorted(m for m in {FRAMEWORKS!r} if m in sys.modules))\n"
    code = "import sys\n" + "".join(statement + "\n" + report for statement in statements)
    return run_python("-c", code).stdout.strip().splitlines()[-len(statements) :]


def test_import_constmem_imports_no_framework():
    statements = ("import constmem; constmem.build_info()", "import constmem.sysconfig as s")
    assert imported_frameworks(*statements, "s.get_include()") == ["[]", "[]", "[]"]


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_constmem_torch_imports_torch_alone():
    assert imported_frameworks("import constmem.torch") == ["['torch']"]


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="jax is not installed")
def test_constmem_jax_imports_jax_alone():
    assert imported_frameworks("import constmem.jax") == ["['jax']"]


@pytest.mark.skipif(
    importlib.util.find_spec("tensorflow") is None, reason="TensorFlow is not installed"
)
def test_constmem_tensorflow_imports_what_tensorflow_does():
    # TensorFlow's Keras imports JAX where it is installed; constmem adds no framework to that.
    alone, with_constmem = imported_frameworks("import tensorflow", "import constmem.tensorflow")
    assert with_constmem == alone
    assert "torch" not in with_constmem


def test_moved_names_say_where_they_went():
    result = run_python("-c", "import constmem; constmem.frobulate", check=False)
    assert result.returncode != 0
    assert "constmem.tensorflow.frobulate" in result.stderr


FRAMEWORK_INCLUDE = re.compile(
    r'#\s*include\s*[<"](tensorflow/|torch/|ATen/|c10/|xla/|pybind11/|nanobind/|Python\.h)'
)


@pytest.mark.parametrize("folder", ["include", "ops"])
def test_kernels_and_core_include_no_framework(folder):
    offenders = []
    for directory, _, files in os.walk(os.path.join(ROOT, folder)):
        for name in files:
            path = os.path.join(directory, name)
            with open(path, encoding="utf-8") as f:
                if FRAMEWORK_INCLUDE.search(f.read()):
                    offenders.append(os.path.relpath(path, ROOT))
    assert not offenders
