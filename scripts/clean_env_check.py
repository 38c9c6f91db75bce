# SPDX-License-Identifier: Apache-2.0
"""Runs one framework's constmem ops in an environment that has only that framework and constmem.

    python clean_env_check.py torch|jax|tensorflow VARIANT

scripts/test-clean-envs.sh runs it in fresh virtual environments, with no compiler on the path.
It checks that the op library came from the prebuilt distribution (not a source build), that no
other framework was installed alongside, and that the ops compute what NumPy computes (CPU).
"""

from __future__ import annotations

import importlib
import importlib.util
import shutil
import sys

import numpy as np

framework, variant = sys.argv[1], sys.argv[2]
others = {"torch", "jax", "tensorflow"} - {framework}
installed = sorted(name for name in others if importlib.util.find_spec(name) is not None)
assert not installed, f"constmem[{framework}] installed {installed} too"
compilers = [c for c in ("g++", "gcc", "c++", "cc", "nvcc", "cmake") if shutil.which(c)]
assert not compilers, f"a compiler is on the path: {compilers}"

import constmem  # noqa: E402 (after the checks of what is installed)
from constmem.ops import describe  # noqa: E402

ops = importlib.import_module(f"constmem.{framework}")
info = constmem.build_info()["bindings"][framework]
assert info["distribution"] == f"constmem-{framework}-{variant}", info
assert info["cuda"].split(".")[0] == variant[2:] and not info["test_hooks"], info


def array(values):
    values = np.asarray(values, np.float32)
    if framework == "torch":
        import torch

        return torch.from_numpy(values)
    if framework == "jax":
        import jax.numpy as jnp

        return jnp.asarray(values)
    import tensorflow as tf

    return tf.constant(values)


def numpy(value):
    return np.asarray(value.numpy() if hasattr(value, "numpy") else value, np.float64)


rng = np.random.default_rng(0)
x = rng.uniform(-1, 1, 1000).astype(np.float32)
coeffs = [0.5, -1.25, 2.0, 0.75]
np.testing.assert_allclose(
    numpy(ops.polyval(coeffs, array(x))), np.polyval(coeffs, x.astype(np.float64)), rtol=1e-5
)
taps = [0.25, 0.5, -0.125, 1.0]
np.testing.assert_allclose(
    numpy(ops.fir_filter(array(x), taps, padding="VALID")),
    np.correlate(x.astype(np.float64), taps, "valid"),
    rtol=1e-5,
    atol=1e-6,
)
# A unit impulse blurred is the outer product of the column and row taps.
image = np.zeros((1, 1, 9, 9), np.float32)
image[0, 0, 4, 4] = 1
blurred = numpy(ops.gaussian_blur(array(image), 5, 1.5))[0, 0, 2:7, 2:7]
row = np.asarray(describe("separable_filter").gaussian_taps(5, 1.5))
np.testing.assert_allclose(blurred, np.outer(row, row), rtol=1e-5, atol=1e-7)
# Upsampling by 2 with taps [1, 1] repeats each sample.
np.testing.assert_allclose(
    numpy(ops.upfirdn(array(x[:10]), [1.0, 1.0], up=2))[:20], np.repeat(x[:10], 2), rtol=1e-6
)
if framework == "torch":  # the schemas, fake kernels and autograd the library registers
    import torch

    torch.library.opcheck(
        torch.ops.constmem.polyval.default, (torch.tensor(coeffs), torch.from_numpy(x))
    )
    torch.library.opcheck(
        torch.ops.constmem.upfirdn.default,
        (torch.from_numpy(x[:50]), torch.tensor(taps), 3, 2),
    )
print(f"clean_env_check: constmem[{framework}] ({info['distribution']}, CUDA {info['cuda']}) OK")
