# SPDX-License-Identifier: Apache-2.0
"""Dequantize's op libraries, loaded with constmem: `tensorflow()`, `torch()` and `jax()` return a
module whose `dequantize(codes, codebook, absmax, block=64, dtype="bfloat16")` is the op in that
framework; `reference()` computes it with NumPy in float32 (each output rounded once to its dtype
by the caller's framework), `random_case()` makes inputs, and NF4 is bitsandbytes' codebook.

Each library loads once, on the first call; later calls are a dictionary lookup.
"""

import numpy as np
from dequantize import dequantize as description
from example_libraries import loaders

DESCRIPTIONS = {"dequantize": description}

# bitsandbytes' NF4 levels (bitsandbytes.functional.get_4bit_type("nf4")), as float32.
NF4 = np.array(
    [
        -1.0,
        -0.6961928009986877,
        -0.5250730514526367,
        -0.39491748809814453,
        -0.28444138169288635,
        -0.18477343022823334,
        -0.09105003625154495,
        0.0,
        0.07958029955625534,
        0.16093020141124725,
        0.24611230194568634,
        0.33791524171829224,
        0.44070982933044434,
        0.5626170039176941,
        0.7229568362236023,
        1.0,
    ],
    np.float32,
)


tensorflow, torch, jax = loaders("dequantize", DESCRIPTIONS)


def reference(codes, codebook, absmax, block=64):
    """y in float32: codebook[code] * absmax[i // block], one float32 product each."""
    codes = np.asarray(codes, np.uint8)
    flat = codes.reshape(-1)
    levels = np.stack([flat >> 4, flat & 0x0F], axis=-1).reshape(-1)
    scales = np.asarray(absmax, np.float32)[np.arange(levels.size) // block]
    y = np.asarray(codebook, np.float32)[levels] * scales
    return y.reshape(*codes.shape[:-1], 2 * codes.shape[-1])


def random_case(shape, block, seed):
    """(codes, codebook, absmax) for codes of `shape`: NF4 levels and positive scales."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 256, shape, dtype=np.uint8)
    outputs = 2 * int(np.prod(shape))
    absmax = rng.uniform(0.01, 4.0, -(-outputs // block)).astype(np.float32)
    return codes, NF4.copy(), absmax
