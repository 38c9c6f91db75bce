# SPDX-License-Identifier: Apache-2.0
"""Python wrapper of Example>ApplyGain: y[..., i] = x[..., i] * gains[row], one gain per row."""

import os

import tensorflow as tf
from constmem.tensorflow import call_table_op

_LIBRARY = os.environ.get(
    "APPLY_GAIN_LIBRARY", os.path.join(os.path.dirname(__file__), "build", "_apply_gain.so")
)
_ops = tf.load_op_library(_LIBRARY)


def apply_gain(x, gains, source="auto"):
    """Scales every row of `x` (all but its last axis flattened) by its own gain.

    source: "input" (a tensor, read in place or copied into constant memory on the GPU), "host"
    (a host-memory input: by value or through pinned staging), "attr" (fixed per node), or "auto"
    ("attr" for Python or NumPy gains, else "input").
    """
    return call_table_op(
        _ops,
        "Example>ApplyGain",
        x,
        gains,
        data_name="x",
        table_name="gains",
        sizes=(1, 4096),
        source=source,
        float64=False,
    )
