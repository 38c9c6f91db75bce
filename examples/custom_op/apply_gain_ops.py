# SPDX-License-Identifier: Apache-2.0
"""ApplyGain's op libraries, loaded with constmem: `tensorflow()`, `torch()` and `jax()` return a
module whose `apply_gain(x, gains)` is the op in that framework.

Each library loads once, on the first call; later calls are a dictionary lookup, which
torch.compile(fullgraph=True) traces through (a functools.cache wrapper would break the graph
when called inside a compiled function).
"""

import os

from apply_gain import apply_gain as description

BUILD = os.environ.get("APPLY_GAIN_BUILD", os.path.join(os.path.dirname(__file__), "build"))
DESCRIPTIONS = {"apply_gain": description}
_LOADED = {}


def tensorflow():
    if "tensorflow" not in _LOADED:
        import constmem.tensorflow

        path = f"{BUILD}/_apply_gain_tf.so"
        _LOADED["tensorflow"] = constmem.tensorflow.load_library(path, DESCRIPTIONS)
    return _LOADED["tensorflow"]


def torch():
    if "torch" not in _LOADED:
        import constmem.torch

        path = f"{BUILD}/_apply_gain_torch.so"
        _LOADED["torch"] = constmem.torch.load_library(path, DESCRIPTIONS)
    return _LOADED["torch"]


def jax():
    if "jax" not in _LOADED:
        import constmem.jax

        path = f"{BUILD}/_apply_gain_jax.so"
        _LOADED["jax"] = constmem.jax.load_library(path, DESCRIPTIONS)
    return _LOADED["jax"]
