# SPDX-License-Identifier: Apache-2.0
"""FirFilter: a 1-D FIR filter along the last axis, taps in constant memory."""

from __future__ import annotations

from typing import Literal

import numpy as np
import tensorflow as tf

from constmem.tensorflow import _loader
from constmem.tensorflow._tables import (
    Source,
    TableOp,
    TensorLike,
    attr_floats,
    float_data,
    invalid,
)

MAX_TAPS = _loader.library_constant("constmem_fir_filter_max_taps")
"""The most taps FirFilter takes (the op library's own limit)."""
_FIR_FILTER = TableOp(
    _loader.ops(), "Constmem>FirFilter", data="x", table="taps", sizes=(1, MAX_TAPS)
)

Padding = Literal["SAME", "VALID"]


@tf.autograph.experimental.do_not_convert
def fir_filter(
    x: TensorLike,
    taps: TensorLike,
    *,
    padding: Padding = "SAME",
    source: Source = "auto",
    name: str | None = None,
) -> tf.Tensor:
    """Filters every row of `x` (its last axis) with `taps`, as a correlation.

    `y[..., i] = sum_j xp[..., i + j] * taps[j]`, what `tf.nn.conv1d` and `np.correlate` compute:
    the taps are applied in order, one fused multiply-add each starting from +0, on the CPU as on
    the GPU, so that the two agree bit for bit. `xp` is the row with zero padding: for "SAME",
    `(k - 1) // 2` zeros before it and the rest after (TensorFlow's rule), as many outputs as
    samples; for "VALID", none, `n - k + 1` outputs (none when the taps outnumber the samples).
    On a GPU the taps are read from `__constant__` memory (or a by-value kernel parameter) with
    warp-uniform indices while the samples are staged in shared memory.

    Args:
      x: float32 or float64 tensor of rank 1 or more; every leading dimension is a batch.
      taps: vector of 1 to 2,048 taps, converted to x's dtype: a tensor, or a Python or NumPy
        sequence.
      padding: "SAME" or "VALID".
      source: how the taps reach the GPU kernel: "input", "host", "attr" or "auto" ("attr" for
        Python or NumPy taps, "input" for a tensor), as for `constmem.polyval`.
      name: optional op name.

    Returns:
      A tensor of x's dtype and shape, the last dimension replaced by the number of outputs.

    Raises:
      tf.errors.InvalidArgumentError: taps of rank other than 1, none or more than 2,048; x of rank
        0 or of a dtype other than float32/float64.
      ValueError: an unknown padding or source.

    Gradients flow to `x` (the same filter with the taps reversed, by the same op) and, for the
    "input" and "host" forms, to `taps` (the padded input correlated with the incoming gradient,
    one tap at a time with TensorFlow's elementwise ops).

    """
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"padding must be 'SAME' or 'VALID'; got {padding!r}")
    x = float_data(x, "x")
    if x.shape.rank == 0:
        raise invalid("x must have rank 1 or more (the filter runs along the last axis)")
    return _FIR_FILTER(x, taps, source=source, attrs={"padding": padding}, name=name)


def _pad_left(k: tf.Tensor, padding: str) -> tf.Tensor:
    return (k - 1) // 2 if padding == "SAME" else tf.zeros_like(k)


def _x_gradient(grad, x, taps, padding, source):
    """dx[i] = sum_j g[i + pad_left - j] taps[j]: the taps reversed over the shifted gradient."""
    n = tf.shape(x)[-1]
    m = tf.shape(grad)[-1]
    k = tf.shape(taps)[0] if tf.is_tensor(taps) else len(taps)
    pad_left = _pad_left(k, padding)
    rank = tf.rank(grad)
    before = k - 1 - pad_left
    after = n - m + pad_left
    paddings = tf.concat(
        [tf.zeros([rank - 1, 2], tf.int32), tf.reshape(tf.stack([before, after]), [1, 2])], 0
    )
    padded = tf.pad(grad, paddings)
    reversed_taps = taps[::-1] if tf.is_tensor(taps) else np.ascontiguousarray(taps[::-1])
    return fir_filter(padded, reversed_taps, padding="VALID", source=source)


def _taps_gradient(grad, x, k, padding):
    """dtaps[j] = sum of g[o] xp[o + j] over rows and outputs, one tap at a time.

    Elementwise products and reductions only (no cuDNN convolution), so the gradient runs wherever
    the op does.
    """
    n = tf.shape(x)[-1]
    m = tf.shape(grad)[-1]
    pad_left = _pad_left(k, padding)
    pad_right = m + k - 1 - n - pad_left
    padded = tf.pad(tf.reshape(x, [-1, n]), [[0, 0], [pad_left, pad_right]])
    rows_g = tf.reshape(grad, [-1, m])
    return tf.map_fn(
        lambda j: tf.reduce_sum(rows_g * padded[:, j : j + m]),
        tf.range(k),
        fn_output_signature=x.dtype,
    )


def _grad_with_input(op, grad):
    x, taps = op.inputs
    padding = op.get_attr("padding").decode()
    grad_x = _x_gradient(grad, x, taps, padding, "input")
    return [grad_x, _taps_gradient(grad, x, tf.shape(taps)[0], padding)]


def _grad_with_attr(op, grad):
    taps = attr_floats(op.get_attr("taps"), op.get_attr("T"))
    return _x_gradient(grad, op.inputs[0], taps, op.get_attr("padding").decode(), "attr")


_FIR_FILTER.register_gradients(_grad_with_input, _grad_with_attr)
