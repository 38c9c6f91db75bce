# SPDX-License-Identifier: Apache-2.0
"""Python wrapper of Example>ApplyGain: y[..., i] = x[..., i] * gains[row], one gain per row."""

import os

import numpy as np
import tensorflow as tf

_LIBRARY = os.environ.get(
    "APPLY_GAIN_LIBRARY", os.path.join(os.path.dirname(__file__), "build", "_apply_gain.so")
)
_ops = tf.load_op_library(_LIBRARY)


def apply_gain(x, gains, source="input"):
    """Scales every row of `x` (all but its last axis flattened) by its own gain.

    source: "input" (a tensor, read in place or copied into constant memory on the GPU), "host"
    (a host-memory input: by value or through pinned staging) or "attr" (fixed per node).
    """
    x = tf.convert_to_tensor(x, tf.float32)
    if source == "attr":
        bits = np.ascontiguousarray(gains, np.float32).view(np.uint32)
        return _ops.example_apply_gain_attr(x=x, gains=[int(b) for b in bits])
    gains = tf.convert_to_tensor(gains, tf.float32)
    if source == "host":
        return _ops.example_apply_gain_host_table(x=x, gains=gains)
    return _ops.example_apply_gain(x=x, gains=gains)
