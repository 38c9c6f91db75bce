# SPDX-License-Identifier: Apache-2.0
"""Python wrapper of Example>ApplyGain: y[..., i] = x[..., i] * gains[row], one gain per row."""

import os

import tensorflow as tf
from constmem.tensorflow import TableOp

_LIBRARY = os.path.join(os.path.dirname(__file__), "build", "_apply_gain.so")
_OPS = tf.load_op_library(os.environ.get("APPLY_GAIN_LIBRARY", _LIBRARY))
_APPLY_GAIN = TableOp(_OPS, "Example>ApplyGain", "x", "gains", sizes=(1, 4096), float64=False)


def apply_gain(x, gains, source="auto"):
    """Scales every row of `x` (all but its last axis flattened) by its own gain.

    source: "input" (a tensor: in place or copied to constant memory on the GPU), "host" (host
    memory: by value or through pinned staging), "attr" (fixed per node), or "auto" ("attr" for
    Python or NumPy gains, else "input").
    """
    return _APPLY_GAIN(x, gains, source=source)
