# SPDX-License-Identifier: Apache-2.0
"""SeparableFilter in TensorFlow: the three table forms, uint8 images, gradients, XLA."""

import constmem.tensorflow as cm
import numpy as np
import pytest
import tensorflow as tf
from test_separable_filter import reference


@pytest.mark.parametrize("border", ["reflect", "zeros", "replicate"])
def test_three_table_forms_match_scipy(device, border):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 9, 11, 3)).astype(np.float32)
    row, column = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 4)
    expected = reference(x, row, column, border, "channels_last")
    r, c = row.astype(np.float32), column.astype(np.float32)
    with tf.device(device):
        for source in ("attr", "input", "host"):
            given = (r, c) if source == "attr" else (tf.constant(r), tf.constant(c))
            y = cm.separable_filter(x, *given, border=border, layout="channels_last", source=source)
            np.testing.assert_allclose(y.numpy(), expected, atol=1e-5)
        # One table static, the other a tensor: both as tensors.
        y = cm.separable_filter(x, r, tf.constant(c), border=border, layout="channels_last")
        np.testing.assert_allclose(y.numpy(), expected, atol=1e-5)


def test_uint8_and_per_image_tables(device):
    rng = np.random.default_rng(8)
    x = rng.integers(0, 256, (2, 3, 8, 10)).astype(np.uint8)
    rows, columns = rng.uniform(0, 0.5, (2, 3)), rng.uniform(0, 0.5, (2, 5))
    expected = np.clip(
        np.round(reference(x, rows, columns, "reflect", "channels_first", True)), 0, 255
    )
    with tf.device(device):
        for source in ("attr", "input", "host"):
            y = cm.separable_filter2d(
                x,
                rows.astype(np.float32) if source == "attr" else tf.constant(rows, tf.float32),
                columns.astype(np.float32)
                if source == "attr"
                else tf.constant(columns, tf.float32),
                source=source,
            )
            assert y.dtype == tf.uint8
            assert np.abs(y.numpy().astype(np.int64) - expected).max() <= 1
        with pytest.raises(tf.errors.InvalidArgumentError, match="column_taps must be float32"):
            cm.separable_filter(x, tf.constant([0.5], tf.float32), tf.constant([0.5], tf.float64))


def test_gradients_and_jit(device):
    rng = np.random.default_rng(9)
    x = tf.constant(rng.standard_normal((2, 1, 5, 6)))
    row = tf.constant(rng.uniform(-1, 1, 2))
    column = tf.constant(rng.uniform(-1, 1, 3))
    with tf.device(device):
        for border in ("reflect", "replicate", "zeros"):
            theoretical, numerical = tf.test.compute_gradient(
                lambda x, r, c, border=border: cm.separable_filter(x, r, c, border=border),
                [x, row, column],
            )
            for a, b in zip(theoretical, numerical, strict=True):
                np.testing.assert_allclose(a, b, atol=1e-6)
        eager = cm.separable_filter(x, row, column)
        compiled = tf.function(lambda x, r, c: cm.separable_filter(x, r, c), jit_compile=True)
        np.testing.assert_array_equal(compiled(x, row, column).numpy(), eager.numpy())
        blurred = tf.function(lambda x: cm.gaussian_blur(x, 3), jit_compile=True)(x)
        np.testing.assert_allclose(blurred.numpy(), cm.gaussian_blur(x, 3).numpy())


def test_sigma_gradient_in_float32_is_float64s(device):
    """The gradient to a float32 sigma tensor is the float64 one's (its taps' reciprocals, integer
    long division, pass the division's gradient), and that the finite difference."""
    images = np.random.default_rng(40).uniform(0, 1, (1, 1, 16, 16))

    def loss(sigma, dtype):
        x = tf.constant(images, dtype)
        return tf.reduce_sum(cm.gaussian_blur(x, 5, sigma) * x)

    with tf.device(device):
        step = 1e-6
        expected = (loss([1.5 + step] * 2, tf.float64) - loss([1.5 - step] * 2, tf.float64)) / (
            2 * step
        )
        for dtype, tolerance in ((tf.float64, 1e-6), (tf.float32, 2e-3)):
            sigma = tf.Variable(tf.constant(1.5, dtype))
            with tf.GradientTape() as tape:
                value = loss(sigma, dtype)
            got = tape.gradient(value, sigma).numpy()
            np.testing.assert_allclose(got, expected.numpy(), rtol=tolerance, err_msg=dtype.name)
