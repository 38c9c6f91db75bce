# SPDX-License-Identifier: Apache-2.0
"""ApplyGain's op libraries, loaded with constmem: `tensorflow()`, `torch()` and `jax()` return a
module whose `apply_gain(x, gains)` is the op in that framework."""

import functools
import os

from apply_gain import apply_gain as description

BUILD = os.environ.get("APPLY_GAIN_BUILD", os.path.join(os.path.dirname(__file__), "build"))
DESCRIPTIONS = {"apply_gain": description}


@functools.cache
def tensorflow():
    import constmem.tensorflow

    return constmem.tensorflow.load_library(f"{BUILD}/_apply_gain_tf.so", DESCRIPTIONS)


@functools.cache
def torch():
    import constmem.torch

    return constmem.torch.load_library(f"{BUILD}/_apply_gain_torch.so", DESCRIPTIONS)


@functools.cache
def jax():
    import constmem.jax

    return constmem.jax.load_library(f"{BUILD}/_apply_gain_jax.so", DESCRIPTIONS)
