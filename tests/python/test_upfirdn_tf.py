# SPDX-License-Identifier: Apache-2.0
"""Upfirdn and its resamplers through TensorFlow: the three table forms against scipy in float64
and the exact definition, resample_poly and resample eagerly and in tf.function, gradients
(tf.test.compute_gradient), errors and the Keras layer, on the CPU and each GPU."""

import constmem.tensorflow as cm
import numpy as np
import pytest
import tensorflow as tf
from reference import torchaudio_resample_float64, upfirdn_fma_reference

scipy_signal = pytest.importorskip("scipy.signal")

SOURCES = ["input", "host", "attr"]
RATES = [(48000, 16000), (16000, 48000), (44100, 48000), (48000, 44100)]


def run(device, x, taps, source, **attrs):
    with tf.device(device):
        table = taps if source == "attr" else tf.constant(taps)
        return cm.upfirdn(x, table, source=source, **attrs).numpy()


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize(
    ("k", "up", "down", "n"),
    [
        (31, 2, 1, 100),
        (31, 1, 2, 100),
        (255, 3, 2, 120),
        (7, 3, 3, 20),
        (9, 4, 3, 1),
        (40, 2, 3, 9),
    ],
)
def test_matches_scipy_in_float64(device, source, k, up, down, n):
    rng = np.random.default_rng(k + up + down + n)
    x = rng.standard_normal((2, 3, n))
    taps = rng.standard_normal(k) / np.sqrt(k)
    expected = scipy_signal.upfirdn(taps, x, up, down)
    y = run(device, x, taps, source, up=up, down=down)
    assert y.shape == expected.shape
    np.testing.assert_allclose(y, expected, rtol=0, atol=1e-13)


@pytest.mark.parametrize("source", SOURCES)
def test_bitwise_the_definition_in_float32(device, source):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 9)).astype(np.float32)
    taps = rng.standard_normal(5).astype(np.float32)
    np.testing.assert_array_equal(
        run(device, x, taps, source, up=3, down=2), upfirdn_fma_reference(x, taps, 3, 2)
    )


def test_unknown_dimensions_and_errors():
    spec = tf.TensorSpec([None, None], tf.float32)
    traced = tf.function(lambda x: cm.upfirdn(x, [1.0, 2.0, 3.0], up=2, down=3))
    out = traced.get_concrete_function(spec).structured_outputs
    assert out.shape.as_list() == [None, None]
    known = tf.function(lambda x: cm.upfirdn(x, [1.0, 2.0, 3.0], up=2, down=3))
    assert known.get_concrete_function(
        tf.TensorSpec([None, 10], tf.float32)
    ).structured_outputs.shape.as_list() == [None, 7]
    with pytest.raises(tf.errors.InvalidArgumentError, match="up must be 1 to 2147483647; got 0"):
        cm.upfirdn(np.ones((2, 4), np.float32), [1.0], up=0)
    with pytest.raises(
        tf.errors.InvalidArgumentError, match="down must be 1 to 2147483647; got 2147483648"
    ):
        cm.upfirdn(np.ones((2, 4), np.float32), tf.constant([1.0]), down=2**31)


@pytest.mark.parametrize(("orig", "new"), RATES)
def test_resamplers_match_scipy_and_torchaudio(device, orig, new):
    rng = np.random.default_rng(abs(orig - new))
    x = rng.standard_normal((2, 900))
    with tf.device(device):
        poly = cm.resample_poly(tf.constant(x), new, orig).numpy()
        sinc = tf.function(lambda a: cm.resample(a, orig, new))(tf.constant(x)).numpy()
    np.testing.assert_allclose(
        poly, scipy_signal.resample_poly(x, new, orig, axis=-1), rtol=0, atol=1e-13
    )
    np.testing.assert_allclose(sinc, torchaudio_resample_float64(x, orig, new), atol=1e-12)


@pytest.mark.parametrize(
    ("source", "k", "up", "down"),
    [("input", 5, 2, 1), ("host", 4, 1, 2), ("input", 9, 3, 2), ("input", 6, 2, 3)],
)
def test_gradients_with_respect_to_x_and_taps(device, source, k, up, down):
    rng = np.random.default_rng(k * up)
    x, taps = rng.standard_normal((2, 6)), rng.standard_normal(k)
    with tf.device(device):
        theoretical, numerical = tf.test.compute_gradient(
            lambda x_, t_: cm.upfirdn(x_, t_, up=up, down=down, source=source),
            [tf.constant(x), tf.constant(taps)],
            delta=1e-6,
        )
        for t, n in zip(theoretical, numerical, strict=True):
            np.testing.assert_allclose(t, n, rtol=1e-6, atol=1e-6)
        theoretical, numerical = tf.test.compute_gradient(
            lambda x_: cm.upfirdn(x_, taps, up=up, down=down, source="attr"),
            [tf.constant(x)],
            delta=1e-6,
        )
        np.testing.assert_allclose(theoretical[0], numerical[0], rtol=1e-6, atol=1e-6)


def test_keras_layer_trains_its_taps():
    keras = pytest.importorskip("keras")
    if keras.backend.backend() != "tensorflow":
        pytest.skip("Keras runs on another backend")
    import constmem.keras

    layer = constmem.keras.Upfirdn(taps=5, up=2, down=3)
    x = np.random.default_rng(1).standard_normal((4, 10)).astype(np.float32)
    y = np.asarray(layer(x))
    assert layer.compute_output_shape((4, 10)) == (4, 8) == y.shape
    np.testing.assert_array_equal(y, cm.upfirdn(x, [1.0, 0, 0, 0, 0], up=2, down=3).numpy())
    assert len(layer.trainable_weights) == 1
    restored = constmem.keras.Upfirdn.from_config(layer.get_config())
    assert (restored.up, restored.down, restored.taps) == (2, 3, 5)
