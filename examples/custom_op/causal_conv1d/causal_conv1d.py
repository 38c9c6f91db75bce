# SPDX-License-Identifier: Apache-2.0
"""CausalConv1d in Python: its signature, documentation and gradients, for every framework.

The C++ description (causal_conv1d_op.h) gives its names, its two tables and their rules;
constmem's `load_library` of each framework makes the op's function from both. An op with several
tables takes each as a parameter of its own, here and in backward().
"""

import numpy as np
from constmem.ops import BATCH, Axes, Halo

SIGNATURE = ("x", "weight", "bias")
DOC = """A depthwise causal convolution of each channel's rows with its own taps, plus its bias.

y[..., c, t] = bias[c] + sum_j weight[c, j] * x[..., c, t - k + 1 + j].

Args:
  x: float32, [..., C, L]; the samples before each row's start are zeros.
  weight: C * k taps, channel c's k taps at c * k (a [C, k] array flattened).
  bias: C entries.
  Each table is a tensor (float32, on the host or x's device) or a Python or NumPy sequence.
"""


def axes(shape, weight, bias, attrs):
    """Rows and channels are BATCH, the samples a Halo of the k - 1 before each output.

    Zeros before a row's start; the weight and the bias hold a block for each channel.
    """
    channels = len(shape) - 2
    taps = weight // shape[channels] if shape[channels] else 1
    data = (*(BATCH,) * (len(shape) - 1), Halo(taps - 1, 0, "zeros"))
    return Axes(data, ((channels,), (channels,)))


def backward(F, grad, x, weight, bias, attrs, need_x, need_weight, need_bias):
    """The gradients to x, weight and bias, each computed only where it is needed."""
    channels, length = F.size(x, -2), F.size(x, -1)
    taps = F.length(weight) // channels
    rows = F.reshape(grad, (-1, channels, length))
    grad_x = grad_weight = grad_bias = None
    if need_x:
        # dx[t] = sum_j weight[j] * grad[t + k - 1 - j]: the op itself on the reversed gradient,
        # with no bias, reversed back.
        reverse = np.arange(length - 1, -1, -1)
        zero_bias = F.zeros(channels, weight)
        grad_x = F.take(F.op(F.take(grad, reverse, -1), weight, zero_bias), reverse, -1)
    if need_weight:
        # dweight[c, j] = sum over the rows of channel c of grad[t] * x[t - k + 1 + j].
        padded = F.reshape(F.pad_last(x, taps - 1, 0), (-1, channels, length + taps - 1))
        columns = [
            F.sum(rows * F.take(padded, np.arange(j, j + length), -1), (0, 2)) for j in range(taps)
        ]
        grad_weight = F.reshape(F.stack(columns, 1), (-1,))
    if need_bias:
        grad_bias = F.sum(rows, (0, 2))
    return grad_x, grad_weight, grad_bias
