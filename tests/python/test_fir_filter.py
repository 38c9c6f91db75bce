# SPDX-License-Identifier: Apache-2.0
"""FirFilter through TensorFlow: every form and padding against an exact reference, np.correlate
and tf.nn.conv1d, edge cases, gradients and errors, on the CPU and each GPU."""

import constmem.tensorflow as cm
import numpy as np
import pytest
import tensorflow as tf
from reference import fir_float64, fir_fma_reference, special_values

SOURCES = ["input", "host", "attr"]
DTYPES = [np.float32, np.float64]
PADDINGS = ["SAME", "VALID"]


def run_fir(device, x, taps, padding, source):
    with tf.device(device):
        table = taps if source == "attr" else tf.constant(taps)
        # The kernel itself: "auto" may take the FFT route for long filters, whose bits are the
        # framework's FFT's.
        return cm.fir_filter(x, table, padding=padding, source=source, method="direct").numpy()


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize(
    "shape,k",
    [((9,), 1), ((9,), 4), ((2, 37), 17), ((3, 2, 40), 8), ((5,), 9), ((2, 150), 63)],
)
def test_bitwise_equal_to_the_definition(device, source, dtype, padding, shape, k):
    rng = np.random.default_rng(abs(hash((source, padding, shape, k))) % 2**32)
    x = rng.standard_normal(shape).astype(dtype)
    taps = rng.standard_normal(k).astype(dtype)
    y = run_fir(device, x, taps, padding, source)
    expected = fir_fma_reference(x, taps, padding)
    assert y.shape == expected.shape and y.dtype == dtype
    np.testing.assert_array_equal(y, expected)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("padding", PADDINGS)
def test_random_shapes_close_to_numpy_correlate(device, dtype, padding):
    rng = np.random.default_rng(21)
    tolerance = 1e-4 if dtype == np.float32 else 1e-12
    for _ in range(10):
        rank = int(rng.integers(1, 4))
        shape = (*(int(d) for d in rng.integers(1, 6, size=rank - 1)), int(rng.integers(1, 5000)))
        k = int(rng.integers(1, 130))
        x = rng.standard_normal(shape).astype(dtype)
        taps = (rng.standard_normal(k) / np.sqrt(k)).astype(dtype)
        y = run_fir(device, x, taps, padding, SOURCES[int(rng.integers(0, 3))])
        expected = fir_float64(x, taps, padding)
        assert y.shape == expected.shape
        np.testing.assert_allclose(y, expected, rtol=0, atol=tolerance * 10)


@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("k", [3, 4, 17, 63])
def test_close_to_tf_nn_conv1d_on_the_cpu(device, padding, k):
    rng = np.random.default_rng(k)
    x = rng.standard_normal((4, 1000)).astype(np.float32)
    taps = rng.standard_normal(k).astype(np.float32)
    with tf.device("/CPU:0"):
        theirs = tf.nn.conv1d(x[:, :, None], taps[:, None, None], 1, padding)[:, :, 0].numpy()
    ours = run_fir(device, x, taps, padding, "input")
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("padding", PADDINGS)
def test_edge_cases(device, source, padding):
    rng = np.random.default_rng(2)
    cases = [
        ((3, 5), 9),  # taps longer than the signal
        ((2, 8), 6),  # even tap count
        ((0, 50), 7),  # empty batch
        ((4, 0), 3),  # rows without samples
        ((1,), 1),
        ((2, 3, 4096 + 17), 16),  # a partial last tile
    ]
    for shape, k in cases:
        x = rng.standard_normal(shape).astype(np.float32)
        taps = rng.standard_normal(k).astype(np.float32)
        y = run_fir(device, x, taps, padding, source)
        if x.size * k <= 20000:
            np.testing.assert_array_equal(y, fir_fma_reference(x, taps, padding))
        else:
            np.testing.assert_allclose(y, fir_float64(x, taps, padding), atol=1e-4)
            with tf.device("/CPU:0"):
                on_cpu = cm.fir_filter(x, tf.constant(taps), padding=padding).numpy()
            np.testing.assert_array_equal(y, on_cpu)


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("count", [1, 1024, 1025, 2048])
def test_tap_counts_across_placements(device, source, count):
    # 512 / 1024 taps are the by-value limits of float64 / float32, 512 a bank slot, 2,048 the bank.
    rng = np.random.default_rng(count)
    for dtype in DTYPES:
        x = rng.standard_normal((2, 3000)).astype(dtype)
        taps = (rng.standard_normal(count) / np.sqrt(count)).astype(dtype)
        run = tf.function(
            lambda x_, t_, taps=taps: cm.fir_filter(
                x_,
                tf.get_static_value(taps) if source == "attr" else t_,
                source=source,
                method="direct",
            )
        )
        if source == "attr":
            y = run_fir(device, x, taps, "SAME", "attr")
        else:
            with tf.device(device):
                y = run(tf.constant(x), tf.constant(taps)).numpy()
        with tf.device("/CPU:0"):
            on_cpu = cm.fir_filter(x, tf.constant(taps), method="direct").numpy()
        np.testing.assert_array_equal(y, on_cpu)
        np.testing.assert_allclose(y, fir_float64(x, taps, "SAME"), atol=1e-4)


# Past the GPU's tiled kernels (2,048 taps): chunks of taps in global memory, the same bits as the
# CPU; and filters longer than the rows.
LONG_CASES = [((2, 3000), 2049), ((2, 5000), 4097), ((3, 900), 20000), ((1, 20300), 20000)]


def long_case(dtype, shape, k):
    rng = np.random.default_rng(k + shape[-1])
    x = rng.standard_normal(shape).astype(dtype)
    taps = (rng.standard_normal(k) / np.sqrt(k)).astype(dtype)
    return x, taps


def long_tolerance(dtype):
    return 2e-4 if dtype == np.float32 else 1e-11


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_long_filters_close_to_numpy_and_bitwise_across_devices(device, source, dtype):
    for shape, k in LONG_CASES:
        x, taps = long_case(dtype, shape, k)
        for padding in PADDINGS:
            y = run_fir(device, x, taps, padding, source)
            expected = fir_float64(x, taps, padding)
            assert y.shape == expected.shape and y.dtype == dtype
            np.testing.assert_allclose(y, expected, rtol=0, atol=long_tolerance(dtype))
            if not device.startswith("/CPU"):
                np.testing.assert_array_equal(y, run_fir("/CPU:0", x, taps, padding, "input"))


def test_long_filters_in_torch_and_jax_match_tensorflow_bitwise():
    """Each framework's wrapper takes any length up to MAX_TAPS: the same bits as TensorFlow's."""
    torch = pytest.importorskip("torch")
    jax = pytest.importorskip("jax")
    import constmem.jax as cm_jax
    import constmem.torch as cm_torch

    jax.config.update("jax_enable_x64", True)
    assert cm_torch.MAX_TAPS == cm_jax.MAX_TAPS == cm.MAX_TAPS == 2**20
    torch_devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    jax_devices = jax.devices("cpu") + [d for d in jax.devices() if d.platform == "gpu"]
    for dtype in DTYPES:
        for shape, k in LONG_CASES[1:3]:
            x, taps = long_case(dtype, shape, k)
            for padding in PADDINGS:
                expected = run_fir("/CPU:0", x, taps, padding, "input")
                np.testing.assert_allclose(
                    expected, fir_float64(x, taps, padding), atol=long_tolerance(dtype)
                )
                for d in torch_devices:
                    for table in (taps, torch.as_tensor(taps, device=d)):
                        y = cm_torch.fir_filter(
                            torch.as_tensor(x, device=d), table, padding=padding, method="direct"
                        )
                        np.testing.assert_array_equal(y.cpu().numpy(), expected)
                for d in jax_devices:
                    y = cm_jax.fir_filter(
                        jax.device_put(x, d),
                        jax.device_put(taps, d),
                        padding=padding,
                        method="direct",
                    )
                    np.testing.assert_array_equal(np.asarray(y), expected)
                    static = jax.jit(
                        lambda v, t=taps, p=padding: cm_jax.fir_filter(
                            v, t, padding=p, method="direct"
                        )
                    )
                    np.testing.assert_array_equal(
                        np.asarray(static(jax.device_put(x, d))), expected
                    )


def test_long_filter_gradients_in_torch():
    torch = pytest.importorskip("torch")
    import constmem.torch as cm_torch

    rng = np.random.default_rng(3)
    x = torch.tensor(rng.standard_normal((2, 40)), requires_grad=True)
    taps = torch.tensor(rng.standard_normal(2100) / 40, requires_grad=True)
    y = cm_torch.fir_filter(x, taps, padding="SAME")
    g = torch.as_tensor(rng.standard_normal(y.shape))
    y.backward(g)
    # The adjoint by hand in float64: dx[i] = sum_j g[i + pad - j] taps[j], dtaps[j] =
    # sum_i g[i] xp[i + j].
    k, pad = 2100, (2100 - 1) // 2
    xp = np.pad(x.detach().numpy(), [(0, 0), (pad, k - 1 - pad)])
    gn = g.numpy()
    expected_taps = sum(np.correlate(xp[r], gn[r], "valid") for r in range(2))
    np.testing.assert_allclose(taps.grad.numpy(), expected_taps, atol=1e-12)
    gp = np.pad(gn, [(0, 0), (k - 1 - pad, pad)])
    expected_x = np.stack(
        [np.correlate(gp[r], taps.detach().numpy()[::-1], "valid") for r in range(2)]
    )
    np.testing.assert_allclose(x.grad.numpy(), expected_x, atol=1e-12)


@pytest.mark.parametrize("source", ["input", "host"])
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("k", [1, 4, 5])
def test_gradients_with_respect_to_x_and_taps(device, source, padding, k):
    rng = np.random.default_rng(k)
    x = rng.standard_normal((2, 3, 11))
    taps = rng.standard_normal(k)
    with tf.device(device):
        theoretical, numerical = tf.test.compute_gradient(
            lambda x_, t_: cm.fir_filter(x_, t_, padding=padding, source=source),
            [tf.constant(x), tf.constant(taps)],
            delta=1e-6,
        )
    for t, n in zip(theoretical, numerical, strict=True):
        np.testing.assert_allclose(t, n, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("padding", PADDINGS)
def test_gradient_of_the_attr_form_flows_to_x(device, padding):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((3, 12))
    taps = rng.standard_normal(6)
    with tf.device(device):
        theoretical, numerical = tf.test.compute_gradient(
            lambda x_: cm.fir_filter(x_, taps, padding=padding, source="attr"),
            [tf.constant(x)],
            delta=1e-6,
        )
    np.testing.assert_allclose(theoretical[0], numerical[0], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_special_values_follow_the_numerics_contract(device, source, dtype):
    # Bitwise the same on every device but NaN payloads, subnormals kept on TensorFlow's CPU threads
    # too (which flush them for TensorFlow's own ops), as for every constmem op (docs/numerics.md).
    x = np.tile(special_values(dtype), 20).reshape(4, -1)
    taps = np.array([0.5, -2.0, 0.0, 3.0, 1.0], dtype)
    y = run_fir(device, x, taps, "SAME", source)
    expected = fir_fma_reference(x, taps, "SAME")
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(y), nan)
    assert y[~nan].tobytes() == expected[~nan].tobytes()


def assert_invalid(call, match):
    with pytest.raises(tf.errors.InvalidArgumentError, match=match):
        call()


@pytest.mark.parametrize("source", SOURCES)
def test_errors_are_invalid_argument_and_the_process_carries_on(device, source):
    with tf.device(device):

        def call(taps, x=None):
            x = np.ones((2, 5), np.float32) if x is None else x
            return cm.fir_filter(x, taps if source == "attr" else tf.constant(taps), source=source)

        assert_invalid(lambda: call(np.zeros(0, np.float32)), "taps must")
        assert_invalid(lambda: call(np.zeros((2, 2), np.float32)), "rank 1")
        assert cm.MAX_TAPS == 2**20
        too_many = np.zeros(cm.MAX_TAPS + 1, np.float32)
        assert_invalid(lambda: call(too_many), "1 to 1048576 entries; got 1048577")
        assert_invalid(lambda: call(np.ones(2, np.float32), np.float32(3)), "rank 1 or more")
        assert_invalid(lambda: call(np.ones(2, np.float32), np.ones(3, np.int32)), "float32")
        np.testing.assert_array_equal(call(np.array([1.0], np.float32)).numpy(), np.ones((2, 5)))


def test_raw_op_rejects_bad_input_in_the_kernel(device):
    ops = cm._loader.ops()
    with tf.device(device):
        assert_invalid(
            lambda: ops.constmem_fir_filter(x=tf.ones([3]), taps=tf.ones([0]), padding="SAME"),
            "taps",
        )
        assert_invalid(
            lambda: ops.constmem_fir_filter(x=tf.constant(1.0), taps=tf.ones([2]), padding="SAME"),
            "rank",
        )


def test_unknown_padding_is_an_invalid_argument():
    with pytest.raises(tf.errors.InvalidArgumentError, match="padding must be 'SAME' or 'VALID'"):
        cm.fir_filter([1.0, 2.0], [1.0], padding="FULL")


def test_static_output_shape():
    @tf.function(input_signature=[tf.TensorSpec([None, 100], tf.float32)])
    def run(x):
        valid = cm.fir_filter(x, np.ones(17, np.float32), padding="VALID")
        same = cm.fir_filter(x, tf.ones([17]), padding="SAME")
        assert valid.shape.as_list() == [None, 84], valid.shape
        assert same.shape.as_list() == [None, 100], same.shape
        return valid

    run(tf.ones([2, 100]))
