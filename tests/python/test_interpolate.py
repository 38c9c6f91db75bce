# SPDX-License-Identifier: Apache-2.0
"""Interpolate through TensorFlow: every form against its exact definition and np.interp, on the
CPU and each GPU (knot counts at every placement's edge), special values, XLA, gradients against
finite differences, and errors."""

import constmem.tensorflow as cm
import numpy as np
import pytest
import tensorflow as tf
from reference import interpolate_float64, interpolate_fma_reference

SOURCES = ["input", "host", "attr"]
DTYPES = [np.float32, np.float64]
LO, HI = -1.5, 2.25


def run_interpolate(device, x, knots, source, lo=LO, hi=HI):
    with tf.device(device):
        table = knots if source == "attr" else tf.constant(knots)
        return cm.interpolate(x, table, lo, hi, source=source).numpy()


def points(rng, shape, dtype, lo=LO, hi=HI):
    margin = 0.1 * (hi - lo)
    return rng.uniform(lo - margin, hi + margin, size=shape).astype(dtype)


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (1,), (7,), (3, 5, 7), (301,)])
def test_bitwise_equal_to_the_definition(device, source, dtype, shape):
    rng = np.random.default_rng(abs(hash((source, np.dtype(dtype).name, shape))) % 2**32)
    knots = rng.standard_normal(int(rng.integers(2, 200))).astype(dtype)
    x = points(rng, shape, dtype)
    y = run_interpolate(device, x, knots, source)
    assert y.shape == x.shape and y.dtype == dtype
    np.testing.assert_array_equal(y, interpolate_fma_reference(x, knots, LO, HI))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("count", [2, 3, 1024, 8192, 16384, 16385, 100000])
def test_knot_counts_across_placements_close_to_np_interp(device, dtype, count):
    # float32 knots up to 256 (1 KiB) are read from global memory, more are staged in shared
    # memory, 16,384 filling the 64 KiB a block stages; float64 knots stay in global memory.
    rng = np.random.default_rng(count)
    knots = rng.standard_normal(count).astype(dtype)
    x = points(rng, (4099,), dtype)
    tolerance = 40 * np.finfo(dtype).eps * count
    for source in SOURCES:
        y = run_interpolate(device, x, knots, source)
        np.testing.assert_allclose(
            y, interpolate_float64(x, knots, LO, HI), rtol=0, atol=tolerance, err_msg=source
        )
        if source == "input":
            first = y
        else:
            np.testing.assert_array_equal(y, first, err_msg=source)


@pytest.mark.parametrize("dtype", DTYPES)
def test_ends_clamp_knots_are_exact_and_nan_stays_nan(device, dtype):
    knots = np.array([1.0, -2.0, 4.0, 0.5, 3.0], dtype)
    x = np.array([-1, -0.5, 0, 0.5, 1, -7, 9, -np.inf, np.inf, np.nan, -0.75, 0.25], dtype)
    y = run_interpolate(device, x, knots, "attr", -1.0, 1.0)
    expected = np.array([1, -2, 4, 0.5, 3, 1, 3, 1, 3, np.nan, -0.5, 2.25], dtype)
    np.testing.assert_array_equal(y, expected)


@pytest.mark.parametrize("source", SOURCES)
def test_xla_gives_the_same_bits(device, source):
    rng = np.random.default_rng(3)
    knots = rng.standard_normal(300)
    x = tf.constant(points(rng, (2, 500), np.float64))
    with tf.device(device):
        table = knots if source == "attr" else tf.constant(knots)
        eager = cm.interpolate(x, table, LO, HI, source=source)
        compiled = tf.function(
            lambda a, k: cm.interpolate(a, knots if source == "attr" else k, LO, HI, source=source),
            jit_compile=True,
        )(x, tf.constant(knots))
    np.testing.assert_array_equal(compiled.numpy(), eager.numpy())


@pytest.mark.parametrize("source", ["input", "host"])
def test_gradients_match_finite_differences(device, source):
    rng = np.random.default_rng(7)
    knots = tf.constant(rng.standard_normal(12))
    # Away from the knots' points, where the slope jumps: the finite difference sees one segment.
    x = tf.constant(np.linspace(LO - 0.3, HI + 0.3, 40) + 0.013)
    with tf.device(device):
        theoretical, numerical = tf.test.compute_gradient(
            lambda a, k: cm.interpolate(a, k, LO, HI, source=source), [x, knots], delta=1e-6
        )
    for t, n in zip(theoretical, numerical, strict=True):
        np.testing.assert_allclose(t, n, rtol=1e-6, atol=1e-6)


def test_attr_gradient_flows_to_x(device):
    knots = np.array([0.0, 2.0, -1.0, 5.0])
    x = tf.constant([-2.0, -1.4, 0.1, 1.3, 2.0, 3.0])
    with tf.device(device), tf.GradientTape() as tape:
        tape.watch(x)
        y = cm.interpolate(x, knots, LO, HI, source="attr")
    # Knots at -1.5, -0.25, 1.0, 2.25: slopes 1.6, -2.4, 4.8 per unit of x; zero outside.
    slope = np.array([0, 1.6, -2.4, 4.8, 4.8, 0])
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), slope, rtol=1e-6)


@pytest.mark.parametrize(
    ("knots", "lo", "hi", "message"),
    [
        ([1.0], 0.0, 1.0, "2 to 1048576"),
        ([1.0] * 1048577, 0.0, 1.0, "2 to 1048576"),
        ([[1.0, 2.0]], 0.0, 1.0, "rank 1"),
        ([1.0, 2.0], 1.0, 0.0, "lo < hi"),
        ([1.0, 2.0], 0.0, np.inf, "finite"),
    ],
)
@pytest.mark.parametrize("source", SOURCES)
def test_bad_input_raises_and_the_next_call_is_right(device, knots, lo, hi, message, source):
    with pytest.raises((tf.errors.InvalidArgumentError, ValueError), match=message):
        run_interpolate(device, np.zeros(3), np.asarray(knots), source, lo, hi)
    after = run_interpolate(device, np.zeros(2), np.array([1.0, 3.0]), source, -1, 1)
    np.testing.assert_array_equal(after, 2)


def test_knot_count_checked_when_the_kernel_runs(device):
    # A table whose length the graph does not know: the kernel refuses it, the next call works.
    fn = tf.function(
        lambda k: cm.interpolate(tf.zeros(4), k, 0.0, 1.0),
        input_signature=[tf.TensorSpec([None], tf.float32)],
    )
    with tf.device(device):
        with pytest.raises(tf.errors.InvalidArgumentError, match="2 to 1048576"):
            fn(tf.ones(1))
        np.testing.assert_array_equal(fn(tf.constant([1.0, 3.0])).numpy(), [1.0] * 4)
