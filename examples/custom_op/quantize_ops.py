# SPDX-License-Identifier: Apache-2.0
"""Quantize's op libraries, loaded with constmem: `tensorflow()`, `torch()` and `jax()` return a
module whose `quantize(x, codebook, block=64)` is the op in that framework, returning (codes,
absmax); `reference()` computes both with NumPy as bitsandbytes' quantize_4bit does, and FP4 is
bitsandbytes' other codebook (NF4 is dequantize_ops.NF4).

Each library loads once, on the first call; later calls are a dictionary lookup.
"""

import numpy as np
from example_libraries import loaders
from quantize import quantize as description

DESCRIPTIONS = {"quantize": description}

# bitsandbytes' FP4 levels (bitsandbytes.functional.get_4bit_type("fp4")): in bit-pattern order,
# not sorted, with both zeros.
_FP4 = np.array([0, 0.0625, 8, 12, 4, 6, 2, 3, -0.0, -0.0625, -8, -12, -4, -6, -2, -3], np.float32)
FP4 = _FP4 / np.float32(12)


tensorflow, torch, jax = loaders("quantize", DESCRIPTIONS)


def reference(x, codebook, block=64):
    """(codes, absmax) as bitsandbytes' quantize_4bit computes them on the CPU, in NumPy.

    float32 throughout: each whole block scaled by the reciprocal of its absmax, the last partial
    one divided by its absmax (clamped to 1e-38, and stored so); the code of the sorted level
    (a stable sort) above the midpoints below the scaled value.
    """
    x = np.asarray(x)
    flat = x.astype(np.float32).reshape(-1)
    n = flat.size
    blocks = -(-n // block)
    padded = np.zeros(blocks * block, np.float32)
    padded[:n] = np.abs(flat)
    absmax = padded.reshape(blocks, block).max(axis=1) if blocks else np.zeros(0, np.float32)
    whole = n // block
    tiny = np.float32(1e-38)
    if whole < blocks:
        absmax[whole] = max(absmax[whole], tiny)
    scale = np.maximum(absmax, tiny)[np.arange(n) // block]
    with np.errstate(divide="ignore", invalid="ignore"):
        scaled = np.where(
            np.arange(n) < whole * block,
            flat * (np.float32(1) / scale),
            flat / scale,
        ).astype(np.float32)
    scaled = np.clip(scaled, -1, 1)
    codebook = np.asarray(codebook, np.float32)
    order = np.argsort(codebook, kind="stable")
    levels = codebook[order]
    bounds = ((levels[:-1] + levels[1:]) / np.float32(2)).astype(np.float32)
    below = (bounds[None, :] < scaled[:, None]).sum(axis=1)
    codes = order[below].astype(np.uint8)
    packed = (codes[0::2] << 4) | codes[1::2]
    return packed.reshape(*x.shape[:-1], x.shape[-1] // 2), absmax.astype(np.float32)


def random_case(shape, seed, dtype=np.float32):
    """x of `shape` (normal values of a few scales, some exact zeros), as `dtype` (a NumPy dtype
    or "bfloat16")."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32) * rng.choice([0.01, 1.0, 300.0], shape)
    x[rng.random(shape) < 0.05] = 0
    if dtype == "bfloat16":
        import ml_dtypes

        return x.astype(ml_dtypes.bfloat16)
    return x.astype(dtype)
