# SPDX-License-Identifier: Apache-2.0
"""Quantize in Python: its signature, documentation, output shapes, axes and gradients.

The C++ description (quantize_op.h) gives its names, its table (the codebook), its attribute and
its two outputs (codes, uint8; absmax, float32); constmem's `load_library` of each framework makes
the op's function from both. It returns (codes, absmax).
"""

from constmem.ops import WHOLE, Axes

SIGNATURE = ("x", "codebook")
DEFAULTS = {"block": 64}
DOC = """Float data quantized to 4-bit codes per block, as bitsandbytes' quantize_4bit.

absmax[b] = max |x| over block b of `block` elements of x in flat order; each element's code is
the codebook level nearest to x / absmax of its block (scaled in float32, clamped to [-1, 1], a
midpoint going to the lower level), two codes a byte, the first in the high nibble. Dequantize
reads them back: dequantize(codes, codebook, absmax, block) is x rounded to the levels.

Args:
  x: float32, float16 or bfloat16, [..., 2n] (the last dimension even).
  codebook: 16 float32 entries (NF4's or FP4's levels, or any 16 values).
  block: the elements an absmax covers (bitsandbytes' blocksize, 64 by default).

Returns:
  (codes, absmax): codes uint8 [..., n]; absmax float32 [ceil(x.size / block)] (the last block's
  clamped to 1e-38 where it is partial, as bitsandbytes stores it).

Gradients: codes take none (integers). absmax's flows to x as the derivative of max |x| over each
block: sign(x) at the block's largest magnitudes, shared equally between ties (as torch.amax's),
zero elsewhere. The codebook takes none.
"""


def output_shape(shape, codebook, attrs, maximum):
    """codes are x's shape with the last dimension halved; absmax one entry a block."""
    elements = 1
    for d in shape:
        elements = elements * d
    block = attrs["block"]
    return (*shape[:-1], shape[-1] // 2), ((elements + block - 1) // block,)


def axes(shape, codebook, attrs):
    """Every axis WHOLE: absmax follows x's flat order, which no shard of x keeps."""
    return Axes((WHOLE,) * len(shape), (None,), (tuple(range(len(shape))), (None,)))


def backward(F, grad_codes, grad_absmax, x, codebook, attrs, need_x, need_codebook):
    """The gradient to x through absmax (codes and the codebook take none)."""
    if not need_x or grad_absmax is None:
        return None, None
    _, absmax = F.op(x, codebook)
    block = attrs["block"]
    blocks = F.length(absmax)
    flat = F.reshape(x, (-1,))
    n = F.size(flat, 0)
    magnitude = F.reshape(F.pad_last(F.abs(flat), 0, blocks * block - n), (blocks, block))
    hit = F.cast(magnitude == F.reshape(absmax, (blocks, 1)), x)
    share = F.reshape(F.cast(grad_absmax, x), (blocks, 1)) / F.maximum(F.sum(hit, 1), 1.0)[:, None]
    grad_x = F.reshape(hit * share, (-1,))[:n] * F.sign(flat)
    shape = [F.size(x, axis) for axis in range(len(x.shape))]
    return F.reshape(grad_x, shape), None
