# SPDX-License-Identifier: Apache-2.0
"""Python wrapper of Example>ApplyGain: y[..., i] = x[..., i] * gains[row], one gain per row."""

import os

import tensorflow as tf
from constmem.tensorflow import TableOp

_LIBRARY = os.environ.get(
    "APPLY_GAIN_LIBRARY", os.path.join(os.path.dirname(__file__), "build", "_apply_gain.so")
)
_APPLY_GAIN = TableOp(
    tf.load_op_library(_LIBRARY),
    "Example>ApplyGain",
    data="x",
    table="gains",
    sizes=(1, 4096),
    float64=False,
)


def apply_gain(x, gains, source="auto"):
    """Scales every row of `x` (all but its last axis flattened) by its own gain.

    source: "input" (a tensor, read in place or copied into constant memory on the GPU), "host"
    (a host-memory input: by value or through pinned staging), "attr" (fixed per node), or "auto"
    ("attr" for Python or NumPy gains, else "input").
    """
    return _APPLY_GAIN(x, gains, source=source)
