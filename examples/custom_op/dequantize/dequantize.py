# SPDX-License-Identifier: Apache-2.0
"""Dequantize in Python: its signature, documentation, output shape, axes and gradients.

The C++ description (dequantize_op.h) gives its names, its two tables, its attributes and its
output rule (the dtype an attribute names); constmem's `load_library` of each framework makes the
op's function from both.
"""

from constmem.ops import WHOLE, Axes

SIGNATURE = ("codes", "codebook", "absmax")
DEFAULTS = {"block": 64, "dtype": "bfloat16"}
DOC = """4-bit codes looked up in a codebook and scaled per block, as bitsandbytes' dequantize_4bit.

y[..., i] = codebook[code i] * absmax[(flat index of i) // block], computed in float32 and rounded
once to `dtype`.

Args:
  codes: uint8, [..., n]: two 4-bit codes a byte, the first in the high nibble; y is [..., 2n].
  codebook: 16 float32 entries (NF4's or FP4's levels, or any 16 values).
  absmax: float32, one scale per block of `block` outputs of y, in y's flat order.
  block: the outputs a scale covers (bitsandbytes' blocksize, 64 by default).
  dtype: y's dtype: bfloat16 (the default), float16 or float32 (a framework's dtype or its name).
  Each table is a tensor (float32, on the host or the codes' device) or a Python or NumPy sequence.
"""


def output_shape(shape, codebook, absmax, attrs, maximum):
    """y is the codes' shape with the last dimension doubled."""
    return (*shape[:-1], 2 * shape[-1])


def axes(shape, codebook, absmax, attrs):
    """Every axis WHOLE: absmax follows y's flat order, which no shard of the codes keeps."""
    return Axes((WHOLE,) * len(shape), (None, None))


def backward(F, grad, codes, codebook, absmax, attrs, need_codes, need_codebook, need_absmax):
    """The gradients to the codebook and to absmax (none to the codes), by the op in float32.

    d codebook[c] = sum of grad * absmax over the outputs of code c; d absmax[b] = sum of
    grad * codebook[code] over block b's outputs.
    """
    exact = {"dtype": "float32"}
    grad = F.reshape(F.cast(grad, codebook), (-1,))
    grad_codebook = grad_absmax = None
    if need_codebook:
        levels = F.arange(0, 16, 1, like=codebook)
        columns = []
        for c in range(16):
            one_hot = F.cast(levels == c, codebook)
            columns.append(F.sum(grad * F.reshape(F.op(codes, one_hot, absmax, **exact), (-1,))))
        grad_codebook = F.stack(columns, 0)
    if need_absmax:
        ones = F.zeros(F.length(absmax), like=absmax) + 1.0
        levels = F.reshape(F.op(codes, codebook, ones, **exact), (-1,))
        block = attrs["block"]
        blocks = F.length(absmax)
        padded = F.pad_last(grad * levels, 0, blocks * block - F.size(levels, 0))
        grad_absmax = F.sum(F.reshape(padded, (blocks, block)), 1)
    return None, grad_codebook, grad_absmax
