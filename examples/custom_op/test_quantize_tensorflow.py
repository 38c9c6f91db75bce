# SPDX-License-Identifier: Apache-2.0
"""Quantize in TensorFlow: codes and absmax (two outputs of the op, each of its own dtype) against
NumPy's bitsandbytes-exact reference, eagerly and in a tf.function, in each table form; the shape
function's shapes; absmax's gradient (none through the codes); bad input naming the argument."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
from dequantize_ops import NF4  # noqa: E402
from quantize_ops import FP4, random_case, reference  # noqa: E402
from quantize_ops import tensorflow as quantize  # noqa: E402


@pytest.fixture(scope="module")
def ops():
    return quantize()


@pytest.mark.parametrize("dtype", [tf.float32, tf.float16, tf.bfloat16], ids=lambda d: d.name)
@pytest.mark.parametrize(("shape", "block"), [((4096,), 64), ((3, 130), 64), ((5, 38), 7)])
def test_codes_and_absmax_equal_the_reference(ops, dtype, shape, block):
    x = tf.cast(random_case(shape, seed=sum(shape) + block), dtype)
    for codebook in (NF4, FP4):
        want_codes, want_absmax = reference(tf.cast(x, tf.float32).numpy(), codebook, block)
        for source in ("attr", "input", "host"):
            table = codebook if source == "attr" else tf.constant(codebook)
            codes, absmax = ops.quantize(x, table, block=block, source=source)
            assert codes.dtype == tf.uint8 and absmax.dtype == tf.float32
            np.testing.assert_array_equal(codes.numpy(), want_codes)
            np.testing.assert_array_equal(absmax.numpy(), want_absmax)
        graph = tf.function(lambda x: ops.quantize(x, codebook, block=block))  # noqa: B023
        codes, absmax = graph(x)
        np.testing.assert_array_equal(codes.numpy(), want_codes)
        np.testing.assert_array_equal(absmax.numpy(), want_absmax)


def test_the_shape_function_gives_each_output_shape(ops):
    shapes = {}

    @tf.function(input_signature=[tf.TensorSpec([None, 64], tf.float32)])
    def rows_unknown(x):
        codes, absmax = ops.quantize(x, NF4, block=16)
        shapes["rows"] = (codes.shape.as_list(), absmax.shape.as_list())
        return codes, absmax

    @tf.function(input_signature=[tf.TensorSpec([6, 10], tf.float32)])
    def known(x):
        codes, absmax = ops.quantize(x, NF4, block=16)
        shapes["known"] = (codes.shape.as_list(), absmax.shape.as_list())
        return codes, absmax

    rows_unknown.get_concrete_function()
    known.get_concrete_function()
    assert shapes["rows"] == ([None, 32], [None])
    assert shapes["known"] == ([6, 5], [4])


def test_absmax_gradient_is_that_of_max_abs(ops):
    x = tf.Variable(random_case((3, 20), seed=9))
    x[0, 2].assign(-tf.reduce_max(tf.abs(x[0, :8])))  # a tie within the first block
    weights = tf.constant(np.random.default_rng(0).standard_normal(8), tf.float32)
    with tf.GradientTape(persistent=True) as tape:
        codes, absmax = ops.quantize(x, tf.constant(NF4), block=8)
        loss = tf.reduce_sum(absmax * weights)
        padded = tf.reshape(tf.pad(tf.reshape(tf.abs(x), [-1]), [[0, 4]]), [-1, 8])
        want_loss = tf.reduce_sum(tf.reduce_max(padded, 1) * weights)  # ties share equally
    got, want = tape.gradient(loss, x), tape.gradient(want_loss, x)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    assert np.abs(got.numpy()).sum() > 0
    through_codes = tape.gradient(codes, x)  # the codes are integers: nothing flows through them
    assert through_codes is None or not np.any(through_codes.numpy())


def test_bad_input_names_the_argument(ops):
    x = random_case((4, 64), seed=6)
    with pytest.raises(tf.errors.InvalidArgumentError, match="x must be float32, float16 or "):
        ops.quantize(x.astype(np.float64), NF4)
    with pytest.raises(tf.errors.InvalidArgumentError, match="x's last dimension must be even"):
        ops.quantize(x[:, :63], NF4)
    with pytest.raises(tf.errors.InvalidArgumentError, match="codebook must have exactly 16"):
        ops.quantize(x, NF4[:15])
    with pytest.raises(tf.errors.InvalidArgumentError, match="block must be 1 to 2"):
        ops.quantize(x, NF4, block=0)
