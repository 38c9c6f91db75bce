# SPDX-License-Identifier: Apache-2.0
"""Dequantize in TensorFlow: each output dtype (a type attr) against NumPy in float32 rounded by
TensorFlow, eagerly and in a tf.function; gradients to the codebook and to absmax."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
from dequantize_ops import random_case, reference  # noqa: E402
from dequantize_ops import tensorflow as dequantize  # noqa: E402


@pytest.fixture(scope="module")
def ops():
    return dequantize()


@pytest.mark.parametrize("dtype", [tf.bfloat16, tf.float16, tf.float32], ids=lambda d: d.name)
@pytest.mark.parametrize(("shape", "block"), [((4096,), 64), ((3, 37), 7)])
def test_each_output_dtype_equals_the_float32_product_rounded_once(ops, dtype, shape, block):
    codes, codebook, absmax = random_case(shape, block, seed=sum(shape) + block)
    want = tf.cast(reference(codes, codebook, absmax, block), dtype)
    y = ops.dequantize(
        tf.constant(codes), tf.constant(codebook), tf.constant(absmax), block=block, dtype=dtype
    )
    assert y.dtype == dtype and tuple(y.shape) == (*shape[:-1], 2 * shape[-1])
    np.testing.assert_array_equal(tf.cast(y, tf.float32).numpy(), tf.cast(want, tf.float32).numpy())
    graph = tf.function(lambda x: ops.dequantize(x, codebook, absmax, block=block, dtype=dtype))
    y = graph(tf.constant(codes))
    np.testing.assert_array_equal(tf.cast(y, tf.float32).numpy(), tf.cast(want, tf.float32).numpy())


def test_gradients_flow_to_the_codebook_and_absmax(ops):
    codes, codebook, absmax = random_case((3, 40), 16, seed=4)
    cb, am = tf.Variable(codebook), tf.Variable(absmax)
    weights = tf.constant(np.random.default_rng(0).standard_normal((3, 80)), tf.float32)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(ops.dequantize(codes, cb, am, block=16, dtype="float32") * weights)
    g_cb, g_am = tape.gradient(loss, [cb, am])
    flat = codes.reshape(-1).astype(np.int64)
    levels = np.stack([flat >> 4, flat & 15], -1).reshape(-1)
    w = weights.numpy().reshape(-1).astype(np.float64)
    blocks = np.arange(levels.size) // 16
    want_cb = np.bincount(levels, w * absmax[blocks], minlength=16)
    want_am = np.bincount(blocks, w * codebook[levels], minlength=absmax.size)
    np.testing.assert_allclose(g_cb.numpy(), want_cb, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(g_am.numpy(), want_am, rtol=1e-5, atol=1e-5)
