# SPDX-License-Identifier: Apache-2.0
"""Polyval: y = polyval(coeffs, x) by Horner's rule, coefficients in constant memory."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from constmem._polyval import coefficient_gradient_blocks
from constmem.tensorflow import _loader
from constmem.tensorflow._tables import (
    Source,
    TableOp,
    TensorLike,
    attr_floats,
)

MAX_COEFFICIENTS = _loader.library_constant("constmem_polyval_max_coefficients")
"""The most coefficients (degree + 1) Polyval takes (the op library's own limit)."""
_POLYVAL = TableOp(
    _loader.ops(), "Constmem>Polyval", data="x", table="coeffs", sizes=(1, MAX_COEFFICIENTS)
)


@tf.autograph.experimental.do_not_convert
def polyval(
    coeffs: TensorLike, x: TensorLike, *, source: Source = "auto", name: str | None = None
) -> tf.Tensor:
    """Evaluates the polynomial `coeffs` (highest degree first, as `np.polyval`) at every `x`.

    `y = coeffs[0]; y = fma(y, x, coeffs[j]) for j = 1 .. n-1`: Horner's rule with one rounding per
    step (a fused multiply-add), on the CPU as on the GPU, so that the two agree bit for bit;
    `np.polyval` and `tf.math.polyval` round twice per step and may differ in the last bits. On a
    GPU the coefficients are read from `__constant__` memory (or a by-value kernel parameter) with
    warp-uniform indices.

    Args:
      coeffs: vector of 1 to 4,096 coefficients, converted to x's dtype: a tensor, or a Python or
        NumPy sequence.
      x: float32 or float64 tensor of any shape, including 0-d and empty.
      source: how the coefficients reach the GPU kernel.
        "input": an ordinary input (up to 4 KiB read in place, more copied into constant memory).
        "host": a host-memory input (up to 4 KiB by value, more staged through pinned memory).
        "attr": fixed per graph node (exact bit patterns in an attr); uploaded at most once per
          device and content.
        "auto" (default): "attr" for Python or NumPy coefficients, "input" for a tensor.
      name: optional op name.

    Returns:
      A tensor with the shape and dtype of `x`.

    Raises:
      tf.errors.InvalidArgumentError: coefficients of rank other than 1, none or more than 4,096;
        x of a dtype other than float32/float64.

    Gradients flow to `x` (the derivative polynomial, evaluated by the same op) and, for the
    "input" and "host" forms, to `coeffs` (`sum(grad * x**k)`, computed with TensorFlow ops).

    """
    return _POLYVAL(x, coeffs, source=source, name=name)


def _derivative(coeffs: tf.Tensor) -> tf.Tensor:
    """Coefficients of the derivative, highest degree first; [0] for a constant."""
    if coeffs.shape[0] is not None:  # static sizes, which XLA needs (jit_compile=True)
        n = coeffs.shape[0]
        if n == 1:
            return tf.zeros([1], coeffs.dtype)
        return coeffs[:-1] * tf.constant(np.arange(n - 1, 0, -1), coeffs.dtype)
    n = tf.shape(coeffs)[0]
    powers = tf.cast(tf.range(n - 1, 0, -1), coeffs.dtype)
    derivative = coeffs[:-1] * powers
    return tf.cond(n > 1, lambda: derivative, lambda: tf.zeros([1], coeffs.dtype))


def _coeffs_gradient(x: tf.Tensor, grad: tf.Tensor, n) -> tf.Tensor:
    """d(sum(grad * y)) / d coeffs[i] = sum(grad * x**(n-1-i)), in blocks of powers."""
    blocks, per_block = coefficient_gradient_blocks(n)
    x, grad = tf.reshape(x, [-1, 1]), tf.reshape(grad, [-1, 1])

    def block(m):
        exponents = tf.cast(m * per_block + tf.range(per_block), x.dtype)
        # Elementwise and a reduction: no cuBLAS call, so the gradient runs wherever the op does.
        return tf.reduce_sum(tf.math.pow(x, exponents) * grad, axis=0)

    if isinstance(blocks, int) and blocks == 1:
        sums = block(0)
    else:
        sums = tf.map_fn(block, tf.range(blocks), fn_output_signature=x.dtype)
    return tf.reverse(tf.reshape(sums, [-1])[:n], [0])


def _grad_with_input(op, grad):
    x, coeffs = op.inputs
    grad_x = grad * polyval(_derivative(coeffs), x, source="input")
    n = coeffs.shape[0] if coeffs.shape[0] is not None else tf.shape(coeffs)[0]
    return [grad_x, _coeffs_gradient(x, grad, n)]


def _grad_with_attr(op, grad):
    coeffs = attr_floats(op.get_attr("coeffs"), op.get_attr("T"))
    derivative = np.polyder(coeffs) if coeffs.size > 1 else np.zeros(1, coeffs.dtype)
    return grad * polyval(derivative.astype(coeffs.dtype), op.inputs[0], source="attr")


_POLYVAL.register_gradients(_grad_with_input, _grad_with_attr)
