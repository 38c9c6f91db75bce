# SPDX-License-Identifier: Apache-2.0
"""Polyval through TensorFlow: every form, random degrees and shapes against exact and NumPy
references, tf.math.polyval, gradients, special values and errors, on the CPU and each GPU."""

import constmem.tensorflow as cm
import numpy as np
import pytest
import tensorflow as tf
from reference import (
    polyval_coefficient_gradient,
    polyval_error_bound,
    polyval_fma_reference,
    special_values,
)

SOURCES = ["input", "host", "attr"]
DTYPES = [np.float32, np.float64]
SHAPES = [(), (0,), (0, 3), (1,), (7,), (3, 5, 7), (301,)]


def run_polyval(device, coeffs, x, source):
    with tf.device(device):
        table = coeffs if source == "attr" else tf.constant(coeffs)
        return cm.polyval(table, x, source=source).numpy()


def random_case(rng, shape, dtype, degree):
    x = rng.uniform(-1.5, 1.5, size=shape).astype(dtype)
    coeffs = rng.standard_normal(degree + 1).astype(dtype)
    return coeffs, x


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_bitwise_equal_to_horner_with_exact_fma(device, source, dtype, shape):
    rng = np.random.default_rng(abs(hash((source, np.dtype(dtype).name, shape))) % 2**32)
    coeffs, x = random_case(rng, shape, dtype, degree=int(rng.integers(0, 65)))
    y = run_polyval(device, coeffs, x, source)
    assert y.shape == x.shape and y.dtype == dtype
    np.testing.assert_array_equal(y, polyval_fma_reference(coeffs, x))


@pytest.mark.parametrize("dtype", DTYPES)
def test_random_degrees_and_shapes_close_to_numpy_in_float64(device, dtype):
    rng = np.random.default_rng(5)
    for _ in range(12):
        shape = tuple(int(d) for d in rng.integers(0, 40, size=int(rng.integers(0, 4))))
        coeffs, x = random_case(rng, shape, dtype, degree=int(rng.integers(0, 65)))
        source = SOURCES[int(rng.integers(0, 3))]
        y = run_polyval(device, coeffs, x, source)
        exact = np.polyval(coeffs.astype(np.float64), x.astype(np.float64))
        assert np.all(np.abs(y - exact) <= polyval_error_bound(coeffs, x)), (shape, source)


@pytest.mark.parametrize("dtype", DTYPES)
def test_close_to_tf_math_polyval(device, dtype):
    rng = np.random.default_rng(9)
    coeffs, x = random_case(rng, (1000,), dtype, degree=16)
    with tf.device(device):
        theirs = tf.math.polyval([tf.constant(c) for c in coeffs], tf.constant(x)).numpy()
    ours = run_polyval(device, coeffs, x, "input")
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=2 * polyval_error_bound(coeffs, x).max())


def polyval_function(attr_coeffs, source):
    """A tf.function taking (x, coeffs), with `attr_coeffs` as a constant for the attr form."""

    def run(x, coeffs):
        return cm.polyval(attr_coeffs if source == "attr" else coeffs, x, source=source)

    return tf.function(run)


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("count", [1, 2, 512, 513, 1024, 1025, 4096])
def test_coefficient_counts_across_placements(device, source, count):
    # 512 / 1024 coefficients are the by-value limits of float64 / float32 (4 KiB), 1,024 the size
    # of a bank slot, 4,096 the whole bank.
    rng = np.random.default_rng(count)
    for dtype in DTYPES:
        coeffs = (rng.standard_normal(count) / count).astype(dtype)
        x = rng.uniform(-1, 1, size=(4099,)).astype(dtype)

        run = polyval_function(coeffs, source)
        with tf.device(device):
            y = run(tf.constant(x), tf.constant(coeffs)).numpy()
        with tf.device("/CPU:0"):
            on_cpu = cm.polyval(tf.constant(coeffs), tf.constant(x)).numpy()
        np.testing.assert_array_equal(y, on_cpu)
        checked = max(1, 4000 // count)  # the exact reference is slow: a few thousand steps
        np.testing.assert_array_equal(y[:checked], polyval_fma_reference(coeffs, x[:checked]))


@pytest.mark.parametrize("source", ["input", "host"])
def test_gradients_with_respect_to_x_and_coeffs(device, source):
    rng = np.random.default_rng(3)
    coeffs, x = random_case(rng, (5, 3), np.float64, degree=6)
    with tf.device(device):
        theoretical, numerical = tf.test.compute_gradient(
            lambda x_, c_: cm.polyval(c_, x_, source=source),
            [tf.constant(x), tf.constant(coeffs)],
            delta=1e-6,
        )
    for t, n in zip(theoretical, numerical, strict=True):
        np.testing.assert_allclose(t, n, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("count", [1, 17, 100, 4096])
def test_coefficient_gradient_of_many_coefficients_matches_float64(device, count):
    # More coefficients than one block of powers, in eager mode, with an unknown table size and
    # under XLA.
    rng = np.random.default_rng(count)
    x, grad = rng.uniform(-1.02, 1.02, size=(2, 37)), rng.standard_normal((2, 37))
    expected, magnitude = polyval_coefficient_gradient(count, x, grad)

    def coeffs_gradient(coeffs, source="input"):
        with tf.GradientTape() as tape:
            tape.watch(coeffs)
            y = tf.reduce_sum(cm.polyval(coeffs, tf.constant(x), source=source) * grad)
        return tape.gradient(y, coeffs)

    unknown_size = tf.function(coeffs_gradient, input_signature=[tf.TensorSpec([None], tf.float64)])
    with tf.device(device):
        coeffs = tf.constant(rng.standard_normal(count))
        results = [coeffs_gradient(coeffs, source) for source in ("input", "host")]
        results += [unknown_size(coeffs), tf.function(coeffs_gradient, jit_compile=True)(coeffs)]
    for result in results:
        assert np.all(np.abs(result.numpy() - expected) <= 1e-13 * magnitude)


def test_gradient_of_the_attr_form_flows_to_x(device):
    rng = np.random.default_rng(4)
    coeffs, x = random_case(rng, (17,), np.float64, degree=9)
    with tf.device(device):
        theoretical, numerical = tf.test.compute_gradient(
            lambda x_: cm.polyval(coeffs, x_, source="attr"), [tf.constant(x)], delta=1e-6
        )
    np.testing.assert_allclose(theoretical[0], numerical[0], rtol=1e-6, atol=1e-6)
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = cm.polyval(coeffs, xt)
    np.testing.assert_allclose(
        tape.gradient(y, xt).numpy(), np.polyval(np.polyder(coeffs), x), rtol=1e-12
    )


@pytest.mark.parametrize("source", SOURCES)
def test_constant_polynomial_has_zero_x_gradient(source):
    xt = tf.constant([1.0, np.inf, -2.0])
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = cm.polyval([3.0] if source == "attr" else tf.constant([3.0]), xt, source=source)
    np.testing.assert_array_equal(y.numpy(), [3.0, 3.0, 3.0])
    np.testing.assert_array_equal(tape.gradient(y, xt).numpy(), [0.0, 0.0, 0.0])


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_special_values_follow_the_numerics_contract(device, source, dtype):
    # As Frobulate's (docs/numerics.md): bitwise the same on every device but NaN payloads,
    # subnormals kept on TensorFlow's CPU threads too.
    x = np.tile(special_values(dtype), 40)
    # Zeros of both signs among the coefficients: y starts as coeffs[0], bit for bit.
    for coeffs in ([0.5, -2.0, 0.0, 3.0], [-0.0], [-0.0, -0.0, 2.0, -0.0]):
        coeffs = np.array(coeffs, dtype)
        y = run_polyval(device, coeffs, x, source)
        expected = polyval_fma_reference(coeffs, x)
        nan = np.isnan(expected)
        np.testing.assert_array_equal(np.isnan(y), nan)
        assert y[~nan].tobytes() == expected[~nan].tobytes(), coeffs


def assert_invalid(call, match):
    with pytest.raises(tf.errors.InvalidArgumentError, match=match):
        call()


@pytest.mark.parametrize("source", SOURCES)
def test_errors_are_invalid_argument_and_the_process_carries_on(device, source):
    with tf.device(device):

        def call(coeffs, x=None):
            x = np.ones(5, np.float32) if x is None else x
            return cm.polyval(coeffs if source == "attr" else tf.constant(coeffs), x, source=source)

        assert_invalid(lambda: call(np.zeros(0, np.float32)), "coeffs must")
        assert_invalid(lambda: call(np.zeros((2, 2), np.float32)), "rank 1")
        too_many = np.zeros(cm.MAX_COEFFICIENTS + 1, np.float32)
        assert_invalid(lambda: call(too_many), "1048576")
        assert_invalid(lambda: call(np.ones(2, np.float32), np.ones(3, np.int32)), "float32")
        np.testing.assert_array_equal(call(np.array([2.0, 1.0], np.float32)).numpy(), [3.0] * 5)


def test_raw_op_rejects_bad_coefficients_in_the_kernel(device):
    ops = cm._loader.ops()
    with tf.device(device):
        assert_invalid(
            lambda: ops.constmem_polyval(x=tf.ones([3]), coeffs=tf.ones([0])), "coeffs must"
        )
        assert_invalid(
            lambda: ops.constmem_polyval_host_table(x=tf.ones([3]), coeffs=tf.ones([2, 1])),
            "rank 1",
        )


def test_attr_coefficients_keep_float64_exactly():
    # The attr holds bit patterns: a coefficient no float32 can represent survives the graph.
    coeffs = np.array([1.0 + 2.0**-40, np.pi], np.float64)

    @tf.function
    def run(x):
        return cm.polyval(coeffs, x, source="attr")

    y = run(tf.constant([1.0], tf.float64)).numpy()
    assert y[0] == polyval_fma_reference(coeffs, np.array([1.0]))[0]
    assert y[0] != polyval_fma_reference(coeffs.astype(np.float32), np.array([1.0], np.float32))[0]


def test_attr_coefficients_must_be_known_when_the_graph_is_built():
    @tf.function
    def run(x, c):
        return cm.polyval(c, x, source="attr")

    with pytest.raises(tf.errors.InvalidArgumentError, match="known when the graph is built"):
        run(tf.ones([2]), tf.ones([2]))


def test_the_gradient_namespace_has_the_standard_functions_and_sigmoid():
    from constmem.tensorflow._tables import TfArrays

    F = TfArrays(None, {})  # the op is not called here
    t = tf.linspace(tf.constant(-3.0, tf.float64), 3.0, 7)
    values = t.numpy()
    np.testing.assert_allclose(F.sigmoid(t).numpy(), 1 / (1 + np.exp(-values)), rtol=1e-15)
    np.testing.assert_allclose(F.exp(t).numpy(), np.exp(values), rtol=1e-15)
    np.testing.assert_allclose(F.tanh(t).numpy(), np.tanh(values), rtol=1e-15)
