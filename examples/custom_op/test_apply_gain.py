# SPDX-License-Identifier: Apache-2.0
"""ApplyGain against NumPy on the CPU and every GPU, every table form and placement."""

import numpy as np
import pytest
import tensorflow as tf
from apply_gain import apply_gain

DEVICES = ["/CPU:0"] + [d.name for d in tf.config.list_logical_devices("GPU")]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("source", ["input", "host", "attr"])
@pytest.mark.parametrize("rows", [1, 7, 1024, 1025, 4096])  # by value, then the constant bank
def test_matches_numpy(device, source, rows):
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, 33)).astype(np.float32)
    gains = rng.standard_normal(rows).astype(np.float32)
    with tf.device(device):
        y = apply_gain(x, gains, source).numpy()
    np.testing.assert_array_equal(y, x * gains[:, None])


@pytest.mark.parametrize("device", DEVICES)
def test_wrong_gain_count_is_invalid_argument(device):
    wrong = tf.errors.InvalidArgumentError
    with tf.device(device), pytest.raises(wrong, match="one entry per row"):
        apply_gain(np.ones((3, 4), np.float32), np.ones(2, np.float32))
    with tf.device(device), pytest.raises(wrong, match="4096"):
        apply_gain(np.ones((4097, 2), np.float32), np.ones(4097, np.float32))
    with tf.device(device), pytest.raises(wrong, match="x must be float32; got float64"):
        apply_gain(np.ones((2, 4), np.float64), [2.0, 3.0])
    with tf.device(device):
        assert apply_gain(np.ones((2, 4), np.float32), [2.0, 3.0]).numpy()[1, 0] == 3.0
