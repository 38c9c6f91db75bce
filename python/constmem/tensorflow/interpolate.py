# SPDX-License-Identifier: Apache-2.0
"""Interpolate: a piecewise-linear lookup into a table of knots, read where lookups are fast."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from constmem.tensorflow import _loader
from constmem.tensorflow._tables import (
    Source,
    TableOp,
    TensorLike,
    attr_bits,
    attr_floats,
    invalid,
)

MAX_KNOTS = _loader.library_constant("constmem_interpolate_max_knots")
"""The most knots Interpolate takes (the op library's own limit); the least is 2."""
_INTERPOLATE = TableOp(
    _loader.ops(), "Constmem>Interpolate", data="x", table="knots", sizes=(2, MAX_KNOTS)
)


def _bounds(lo: float, hi: float, dtype: tf.DType) -> list[int]:
    """[lo, hi] as the op's `bounds` attr, after checking them in the data's dtype."""
    values = np.asarray([lo, hi], dtype=dtype.as_numpy_dtype)
    if not (np.all(np.isfinite(values)) and values[0] < values[1]):
        raise invalid(f"the range [lo, hi] must be finite with lo < hi; got [{lo}, {hi}]")
    return attr_bits(values, dtype)


@tf.autograph.experimental.do_not_convert
def interpolate(
    x: TensorLike,
    knots: TensorLike,
    lo: float,
    hi: float,
    *,
    source: Source = "auto",
    name: str | None = None,
) -> tf.Tensor:
    """Interpolates linearly into `knots`, n values at n equally spaced points over [lo, hi].

    `np.interp(x, np.linspace(lo, hi, n), knots)`, clamped to the end knots outside [lo, hi], NaN
    for NaN, computed as `t = (x - lo) * ((n - 1) / (hi - lo))`, `i = floor(t)`,
    `y = fma(t - i, knots[i + 1] - knots[i], knots[i])` in x's dtype, on the CPU as on the GPU (bit
    for bit). On a GPU every element reads the knots at its own index: they are staged into each
    block's shared memory (up to 64 KiB) or read from global memory, never from constant memory,
    which serialises such reads.

    Args:
      x: float32 or float64 tensor of any shape.
      knots: 2 to 16,384 values, converted to x's dtype: a tensor, or a Python or NumPy sequence.
      lo: where the first knot lies; finite, below hi in x's dtype.
      hi: where the last knot lies; finite.
      source: how the knots reach the GPU kernel: "input" (a tensor, read in place or staged),
        "host" (a host-memory input, staged through pinned memory), "attr" (fixed per graph node,
        uploaded at most once per device and content), or "auto" (default): "attr" for Python or
        NumPy knots, "input" for a tensor.
      name: optional op name.

    Returns:
      A tensor with the shape and dtype of `x`.

    Raises:
      tf.errors.InvalidArgumentError: knots of rank other than 1, fewer than 2 or more than 16,384;
        a range that is not finite or not increasing; x of a dtype other than float32/float64.

    Gradients flow to `x` (the slope of its segment, zero outside [lo, hi]) and, for the "input"
    and "host" forms, to `knots`.

    """
    return _INTERPOLATE(
        x, knots, source=source, name=name, attrs=lambda dtype: {"bounds": _bounds(lo, hi, dtype)}
    )


def _gradients(x, knots, lo, hi, grad, with_knots: bool):
    """d/dx and d/dknots of sum(grad * y), with TensorFlow ops, in the op's own arithmetic."""
    dtype = x.dtype
    n = tf.shape(knots)[0]
    last = tf.cast(n - 1, dtype)
    lo_t = tf.constant(lo, dtype)
    scale = last / (tf.constant(hi, dtype) - lo_t)
    t = (x - lo_t) * scale
    inside = (t > 0) & (t < last)
    # t clamped to [0, n - 1] (NaN to 0): the segment of every x, the last one above hi.
    t_clamped = tf.where(t >= last, last + tf.zeros_like(t), tf.where(inside, t, tf.zeros_like(t)))
    i = tf.minimum(tf.cast(tf.floor(t_clamped), tf.int32), n - 2)
    f = t_clamped - tf.cast(i, dtype)
    below = tf.gather(knots, i)
    above = tf.gather(knots, i + 1)
    zero = tf.zeros_like(grad)
    grad_x = tf.where(inside, grad * ((above - below) * scale), zero)
    if not with_knots:
        return grad_x, None
    # Inside, the weights of the two knots around x; below lo all of it on the first knot (i = 0),
    # above hi on the last (i + 1 = n - 1).
    at_below = tf.where(inside, grad * (1 - f), tf.where(t <= 0, grad, zero))
    at_above = tf.where(inside, grad * f, tf.where(t >= last, grad, zero))
    weights = tf.concat([tf.reshape(at_below, [-1]), tf.reshape(at_above, [-1])], 0)
    indices = tf.concat([tf.reshape(i, [-1]), tf.reshape(i + 1, [-1])], 0)
    grad_knots = tf.math.unsorted_segment_sum(weights, indices, n)
    return grad_x, grad_knots


def _range(op) -> tuple[float, float]:
    lo, hi = attr_floats(op.get_attr("bounds"), op.get_attr("T"))
    return float(lo), float(hi)


def _grad_with_input(op, grad):
    x, knots = op.inputs
    return list(_gradients(x, knots, *_range(op), grad, with_knots=True))


def _grad_with_attr(op, grad):
    knots = tf.constant(attr_floats(op.get_attr("knots"), op.get_attr("T")))
    return _gradients(op.inputs[0], knots, *_range(op), grad, with_knots=False)[0]


_INTERPOLATE.register_gradients(_grad_with_input, _grad_with_attr)
