# SPDX-License-Identifier: Apache-2.0
"""Upfirdn and the resamplers built on it in PyTorch and JAX (TensorFlow where installed): against
scipy.signal.upfirdn and resample_poly in float64 (past 4,096 taps and rates of 1,024 too), the
exact polyphase definition, torchaudio's resample (where importable; else its definition in NumPy)
over every ordered pair of 11 audio rates, gradients against finite differences, jit, vmap,
torch.compile(fullgraph=True) and opcheck, on the CPU and each GPU."""

import functools
import importlib.util
import math

import numpy as np
import pytest
from reference import torchaudio_resample_float64, upfirdn_fma_reference

scipy_signal = pytest.importorskip("scipy.signal")

RATES = [(48000, 16000), (16000, 48000), (44100, 48000), (48000, 44100)]
# (taps, up, down, samples): the filters, up = down, one sample, more taps than samples.
CASES = [
    (31, 2, 1, 200),
    (31, 1, 2, 200),
    (31, 3, 2, 200),
    (255, 2, 1, 300),
    (255, 1, 2, 300),
    (255, 3, 2, 300),
    (7, 3, 3, 40),
    (5, 1, 1, 40),
    (9, 4, 3, 1),
    (40, 2, 3, 9),
    (4096, 7, 5, 30),
]
FRAMEWORKS = [name for name in ("torch", "jax") if importlib.util.find_spec(name) is not None]


class Torch:
    name = "torch"

    def __init__(self):
        import constmem.torch as cm
        import torch

        self.torch, self.ops = torch, cm
        self.devices = ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]

    def tensor(self, values, device, dtype=None):
        array = np.asarray(values, dtype=dtype)
        return self.torch.from_numpy(array.copy()).to(device)

    def numpy(self, value):
        return value.detach().cpu().numpy()


class Jax:
    name = "jax"

    def __init__(self):
        import constmem.jax as cm
        import jax

        jax.config.update("jax_enable_x64", True)
        self.jax, self.ops = jax, cm
        self.devices = jax.devices("cpu") + [d for d in jax.devices() if d.platform == "gpu"]

    def tensor(self, values, device, dtype=None):
        return self.jax.device_put(np.asarray(values, dtype=dtype), device)

    def numpy(self, value):
        return np.asarray(value)


@pytest.fixture(params=FRAMEWORKS, scope="module")
def fw(request):
    return Torch() if request.param == "torch" else Jax()


def upfirdn_scipy(x, taps, up, down):
    return scipy_signal.upfirdn(np.asarray(taps, np.float64), np.asarray(x, np.float64), up, down)


@pytest.mark.parametrize(("k", "up", "down", "n"), CASES)
def test_upfirdn_matches_scipy_in_float64(fw, k, up, down, n):
    rng = np.random.default_rng(k * 1000 + up * 10 + down)
    x = rng.standard_normal((2, 3, n))
    taps = rng.standard_normal(k) / np.sqrt(k)
    expected = upfirdn_scipy(x, taps, up, down)
    for device in fw.devices:
        data = fw.tensor(x, device)
        for form, table in (("static", taps.tolist()), ("tensor", fw.tensor(taps, device))):
            y = fw.numpy(fw.ops.upfirdn(data, table, up=up, down=down, method="direct"))
            assert y.shape == expected.shape, form
            np.testing.assert_allclose(y, expected, rtol=0, atol=1e-13, err_msg=form)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("k", "up", "down", "n"), [(5, 3, 2, 7), (4, 2, 5, 9), (3, 1, 1, 4)])
def test_upfirdn_is_bitwise_its_polyphase_definition(fw, dtype, k, up, down, n):
    rng = np.random.default_rng(k + n)
    x = rng.standard_normal((2, n)).astype(dtype)
    taps = rng.standard_normal(k).astype(dtype)
    expected = upfirdn_fma_reference(x, taps, up, down)
    for device in fw.devices:
        y = fw.numpy(
            fw.ops.upfirdn(fw.tensor(x, device), fw.tensor(taps, device), up=up, down=down)
        )
        np.testing.assert_array_equal(y, expected)


def test_upfirdn_attributes_are_checked(fw):
    x = fw.tensor(np.ones((2, 8)), fw.devices[0])
    for attrs, message in (
        ({"up": 0}, "up must be 1 to 2147483647; got 0"),
        ({"down": 2**31}, "down must be 1 to 2147483647; got 2147483648"),
    ):
        with pytest.raises(ValueError, match=message):
            fw.numpy(fw.ops.upfirdn(x, [1.0, 2.0], **attrs))
    assert fw.ops.MAX_UPFIRDN_TAPS == 2**20
    with pytest.raises(ValueError, match="taps"):
        fw.numpy(fw.ops.upfirdn(x, np.zeros(2**20 + 1)))
    # The largest rates: 8 samples at 2^31 - 1 up and down (one tap a phase at most).
    y = fw.numpy(fw.ops.upfirdn(x, [1.0, 2.0], up=2**31 - 1, down=2**31 - 1))
    np.testing.assert_array_equal(y, np.ones((2, 8)))
    # Rows of no sample: scipy's length, negative (an error) with fewer taps than up - down + 1.
    empty = fw.tensor(np.ones((2, 0)), fw.devices[0])
    assert fw.numpy(fw.ops.upfirdn(empty, [1.0] * 5, up=2, down=1)).shape == (2, 3)
    with pytest.raises(ValueError, match="negative output length"):
        fw.numpy(fw.ops.upfirdn(empty, [1.0], up=3, down=1))


# Past 4,096 taps and rates of 1,024: (taps, up, down, samples).
LARGE_CASES = [
    (5000, 1, 1, 300),
    (20000, 3, 2, 40),
    (2**20, 1000, 3, 12),
    (31, 1025, 1024, 50),
    (61, 1, 3000, 20000),
    (9, 2**31 - 1, 2**31 - 2, 40),
    (40000, 65537, 3, 3),
    (31005, 2560, 147, 60),
    (31005, 147, 2560, 600),
]


@functools.cache
def large_case(k, up, down, n):
    """x, taps and scipy's result (seconds for the longest filters: once for every framework)."""
    rng = np.random.default_rng(k + up + down)
    x = rng.standard_normal((2, n))
    taps = rng.standard_normal(k) / np.sqrt(min(k, n * up))
    return x, taps, upfirdn_scipy(x, taps, up, down)


@pytest.mark.parametrize(("k", "up", "down", "n"), LARGE_CASES)
def test_upfirdn_past_the_constant_bank_matches_scipy(fw, k, up, down, n):
    if fw.name == "jax" and k == 2**20:
        pytest.skip("the most taps in PyTorch alone: JAX compiles them into its program (seconds)")
    x, taps, expected = large_case(k, up, down, n)
    for device in fw.devices:
        data = fw.tensor(x, device)
        for form, table in (("static", taps.tolist()), ("tensor", fw.tensor(taps, device))):
            # The kernel's tolerance ("auto" may take the FFT route, whose bound is wider).
            y = fw.numpy(fw.ops.upfirdn(data, table, up=up, down=down, method="direct"))
            assert y.shape == expected.shape, form
            np.testing.assert_allclose(y, expected, rtol=0, atol=1e-12, err_msg=form)


@pytest.mark.parametrize(("up", "down"), [(205, 1), (1, 205), (441, 640), (2560, 147), (3001, 7)])
def test_resample_poly_past_the_old_rates_matches_scipy(fw, up, down):
    rng = np.random.default_rng(up * 3 + down)
    n = max(40, -(-300 * down // up))
    x = rng.standard_normal((2, n))
    expected = scipy_signal.resample_poly(x, up, down, axis=-1)
    x32 = x.astype(np.float32)
    expected32 = scipy_signal.resample_poly(x32, up, down, axis=-1)
    device = fw.devices[-1]
    y = fw.numpy(fw.ops.resample_poly(fw.tensor(x, device), up, down))
    assert y.shape == expected.shape
    np.testing.assert_allclose(y, expected, rtol=0, atol=1e-13)
    y32 = fw.numpy(fw.ops.resample_poly(fw.tensor(x32, device), up, down))
    np.testing.assert_allclose(y32, expected32, rtol=0, atol=2e-5)


def test_a_static_table_of_400000_taps(fw):
    # A static table (a Python sequence, fixed per call site) of 400,000 taps, under jit in JAX.
    rng = np.random.default_rng(400)
    taps = rng.standard_normal(400_000) / 600
    static = tuple(taps.tolist())
    x = rng.standard_normal((2, 30))
    expected = upfirdn_scipy(x, taps, 7000, 3)
    data = fw.tensor(x, fw.devices[0])
    if fw.name == "jax":
        y = fw.jax.jit(lambda a: fw.ops.upfirdn(a, static, up=7000, down=3))(data)
    else:
        y = fw.ops.upfirdn(data, static, up=7000, down=3)
    np.testing.assert_allclose(fw.numpy(y), expected, rtol=0, atol=1e-13)


def test_a_static_table_of_400000_taps_in_tensorflow():
    # An attr of 400,000 entries, eagerly and in a tf.function.
    tf = pytest.importorskip("tensorflow")
    import constmem.tensorflow as cmt

    rng = np.random.default_rng(401)
    taps = rng.standard_normal(400_000) / 600
    static = tuple(taps.tolist())
    x = rng.standard_normal((2, 30))
    expected = upfirdn_scipy(x, taps, 7000, 3)
    with tf.device("/CPU:0"):
        eager = cmt.upfirdn(tf.constant(x), static, up=7000, down=3).numpy()
        traced = tf.function(lambda a: cmt.upfirdn(a, static, up=7000, down=3))
        graph = traced(tf.constant(x)).numpy()
    np.testing.assert_allclose(eager, expected, rtol=0, atol=1e-13)
    np.testing.assert_array_equal(graph, eager)


@pytest.mark.parametrize(("orig", "new"), RATES)
def test_resample_poly_matches_scipy(fw, orig, new):
    rng = np.random.default_rng(orig + new)
    x = rng.standard_normal((2, 1500))
    expected = scipy_signal.resample_poly(x, new, orig, axis=-1)
    x32 = x.astype(np.float32)
    expected32 = scipy_signal.resample_poly(x32, new, orig, axis=-1)
    for device in fw.devices:
        y = fw.numpy(fw.ops.resample_poly(fw.tensor(x, device), new, orig))
        assert y.shape == expected.shape
        np.testing.assert_allclose(y, expected, rtol=0, atol=1e-13)
        y32 = fw.numpy(fw.ops.resample_poly(fw.tensor(x32, device), new, orig))
        assert y32.dtype == np.float32
        np.testing.assert_allclose(y32, expected32, rtol=0, atol=2e-5)


@pytest.mark.parametrize(
    ("up", "down", "n", "window"),
    [
        (3, 2, 1, ("kaiser", 5.0)),
        (2, 2, 17, ("kaiser", 5.0)),
        (1, 3, 5, "hann"),
        (5, 1, 7, "hamming"),
        (2, 7, 30, "blackman"),
        (3, 2, 40, [0.25, 0.5, 1.0, 0.5, 0.25]),
    ],
)
def test_resample_poly_edge_cases_and_windows(fw, up, down, n, window):
    x = np.random.default_rng(n).standard_normal((3, n))
    expected = scipy_signal.resample_poly(x, up, down, axis=-1, window=window)
    y = fw.numpy(fw.ops.resample_poly(fw.tensor(x, fw.devices[-1]), up, down, window=window))
    assert y.shape == expected.shape
    np.testing.assert_allclose(y, expected, rtol=0, atol=1e-13)


@pytest.mark.parametrize(("orig", "new"), [*RATES, (1, 7), (5, 3)])
@pytest.mark.parametrize("method", ["sinc_interp_hann", "sinc_interp_kaiser"])
def test_resample_matches_torchaudios_definition(fw, orig, new, method):
    rng = np.random.default_rng(orig * 3 + new)
    x = rng.standard_normal((2, 700))
    expected = torchaudio_resample_float64(x, orig, new, kaiser=method == "sinc_interp_kaiser")
    for device in fw.devices:
        y = fw.numpy(fw.ops.resample(fw.tensor(x, device), orig, new, resampling_method=method))
        assert y.shape == expected.shape
        np.testing.assert_allclose(y, expected, rtol=0, atol=1e-12)
    assert fw.ops.resample(x, orig, orig) is x


@pytest.mark.parametrize(("orig", "new"), RATES)
def test_resample_matches_torchaudio(orig, new):
    torchaudio = pytest.importorskip("torchaudio")
    torch = pytest.importorskip("torch")
    import constmem.torch as cm

    x = torch.from_numpy(np.random.default_rng(new).standard_normal((3, 2000)))
    # torchaudio's Kaiser window takes beta and i0(beta) in float32 even for float64 data: the
    # two agree to float32 rounding there, to float64's with the Hann window. In float32 both
    # sum up to 21 products of a filter torchaudio designs in float32, constmem in float64.
    tolerances = {
        (torch.float64, "sinc_interp_hann"): 1e-12,
        (torch.float64, "sinc_interp_kaiser"): 1e-6,
        (torch.float32, "sinc_interp_hann"): 1e-4,
        (torch.float32, "sinc_interp_kaiser"): 1e-4,
    }
    for (dtype, method), tolerance in tolerances.items():
        data = x.to(dtype)
        expected = torchaudio.functional.resample(data, orig, new, resampling_method=method)
        y = cm.resample(data, orig, new, resampling_method=method)
        assert y.shape == expected.shape and y.dtype == dtype
        np.testing.assert_allclose(y.numpy(), expected.numpy(), rtol=0, atol=tolerance)


def dense_matrix(n, taps, up, down):
    """Upfirdn on rows of n samples as a matrix (scipy's, in float64)."""
    return np.stack([upfirdn_scipy(np.eye(n)[t], taps, up, down) for t in range(n)], axis=1)


# 2/1, 1/2, 3/2 with more taps than samples, 2/3; up and down with a common factor (the adjoint
# takes every 2nd, every 100th tap), rates past 1,024.
GRADIENT_CASES = [
    (5, 2, 1, 6),
    (4, 1, 2, 7),
    (9, 3, 2, 3),
    (6, 2, 3, 5),
    (9, 4, 6, 5),
    (301, 200, 300, 6),
    (5, 1500, 1499, 4),
    (50, 1025, 1024, 3),
]


@pytest.mark.parametrize(("k", "up", "down", "n"), GRADIENT_CASES)
def test_gradients_match_finite_differences(fw, k, up, down, n):
    rng = np.random.default_rng(k * n)
    x, taps = rng.standard_normal((2, n)), rng.standard_normal(k)
    if fw.name == "torch":
        torch = fw.torch
        for device in fw.devices:
            inputs = (
                torch.tensor(x, device=device, requires_grad=True),
                torch.tensor(taps, device=device, requires_grad=True),
            )
            assert torch.autograd.gradcheck(
                lambda a, t: fw.ops.upfirdn(a, t, up=up, down=down), inputs, eps=1e-6, atol=1e-7
            )
            static = taps.tolist()
            assert torch.autograd.gradcheck(
                lambda a, s=static: fw.ops.upfirdn(a, s, up=up, down=down), inputs[:1], atol=1e-7
            )
    else:
        from jax.test_util import check_grads

        for device in fw.devices:
            data, table = fw.tensor(x, device), fw.tensor(taps, device)
            check_grads(
                lambda a, t: fw.ops.upfirdn(a, t, up=up, down=down), (data, table), 1, ["rev"]
            )
            check_grads(
                lambda a: fw.ops.upfirdn(a, taps.tolist(), up=up, down=down), (data,), 1, ["rev"]
            )


def test_gradient_of_the_most_taps_runs_in_chunks(fw):
    # 2^20 taps at up 2: the adjoint's padded taps (2^20 + 1) would pass the limit; it runs in two
    # chunks. (Down 1,001 keeps the gradient short: the adjoint computes about k / up outputs.)
    rng = np.random.default_rng(5)
    k, n, up, down = 2**20, 6, 2, 1001
    taps = rng.standard_normal(k)
    x = rng.standard_normal((1, n))
    outputs = ((n - 1) * up + k - 1) // down + 1
    grad = rng.standard_normal((1, outputs))
    # dx[t] = sum_i g[i] h[i * down - t * up].
    i = np.arange(outputs)
    expected_dx = np.zeros((1, n))
    for t in range(n):
        j = i * down - t * up
        hit = (j >= 0) & (j < k)
        expected_dx[0, t] = (grad[0, hit] * taps[j[hit]]).sum()
    device = fw.devices[-1]
    if fw.name == "torch":
        data = fw.tensor(x, device).requires_grad_(True)
        table = fw.tensor(taps, device).requires_grad_(True)
        fw.ops.upfirdn(data, table, up=up, down=down).backward(fw.tensor(grad, device))
        dx, dtaps = fw.numpy(data.grad), fw.numpy(table.grad)
    else:
        _, vjp = fw.jax.vjp(
            lambda a, t: fw.ops.upfirdn(a, t, up=up, down=down),
            fw.tensor(x, device),
            fw.tensor(taps, device),
        )
        dx, dtaps = (fw.numpy(g) for g in vjp(fw.tensor(grad, device)))
    np.testing.assert_allclose(dx, expected_dx, rtol=0, atol=1e-11)
    # dtaps[j] = sum_i g[i] xup[i * down - j], xup the row with up - 1 zeros after each sample.
    expected = np.zeros(k)
    j = np.arange(k)
    for s in range(n):
        i, rest = np.divmod(s * up + j, down)
        hit = (rest == 0) & (i < grad.shape[1])
        expected[hit] += x[0, s] * grad[0, i[hit]]
    np.testing.assert_allclose(dtaps, expected, rtol=0, atol=1e-11)


def test_gradient_for_x_needs_the_reduced_up_below_the_limit(fw):
    # P = up / gcd = 2^21 + 1 and two taps: no chunk of the adjoint's padded taps fits.
    x = fw.tensor(np.ones((1, 4)), fw.devices[0])
    up, down = 2**21 + 1, 2**21
    if fw.name == "torch":
        data = x.requires_grad_(True)
        y = fw.ops.upfirdn(data, [1.0, 2.0], up=up, down=down)
        with pytest.raises(ValueError, match="gradient for x"):
            y.sum().backward()
    else:
        with pytest.raises(ValueError, match="gradient for x"):
            fw.jax.grad(lambda a: fw.ops.upfirdn(a, [1.0, 2.0], up=up, down=down).sum())(x)


def test_resamplers_have_gradients(fw):
    x = np.random.default_rng(3).standard_normal((2, 12))
    if fw.name == "torch":
        torch = fw.torch
        data = torch.tensor(x, requires_grad=True)
        assert torch.autograd.gradcheck(lambda a: fw.ops.resample_poly(a, 3, 2), (data,))
        assert torch.autograd.gradcheck(lambda a: fw.ops.resample(a, 2, 3), (data,))
    else:
        from jax.test_util import check_grads

        check_grads(lambda a: fw.ops.resample_poly(a, 3, 2), (fw.jax.numpy.asarray(x),), 1, ["rev"])
        check_grads(lambda a: fw.ops.resample(a, 2, 3), (fw.jax.numpy.asarray(x),), 1, ["rev"])


def test_jax_jit_and_vmap():
    if "jax" not in FRAMEWORKS:
        pytest.skip("needs jax")
    fw = Jax()
    jax, cm = fw.jax, fw.ops
    rng = np.random.default_rng(8)
    x, taps = rng.standard_normal((4, 3, 50)), rng.standard_normal(31)
    expected = upfirdn_scipy(x, taps, 3, 2)
    for device in fw.devices:
        data, table = fw.tensor(x, device), fw.tensor(taps, device)
        jitted = jax.jit(lambda a, t: cm.upfirdn(a, t, up=3, down=2))
        np.testing.assert_allclose(np.asarray(jitted(data, table)), expected, atol=1e-13)
        mapped = jax.vmap(lambda a: cm.upfirdn(a, taps.tolist(), up=3, down=2))
        np.testing.assert_allclose(np.asarray(mapped(data)), expected, atol=1e-13)
        # A batch of tables: one call per table.
        tables = fw.tensor(np.stack([taps, 2 * taps]), device)
        both = jax.vmap(lambda t, d=data: cm.upfirdn(d[0], t, up=3, down=2))(tables)
        np.testing.assert_allclose(np.asarray(both[1]), 2 * expected[0], atol=1e-12)
        resampled = jax.jit(jax.vmap(lambda a: cm.resample_poly(a, 3, 2)))(data)
        np.testing.assert_allclose(
            np.asarray(resampled), scipy_signal.resample_poly(x, 3, 2, axis=-1), atol=1e-13
        )
        grad = jax.jit(jax.grad(lambda a, t: cm.resample(cm.upfirdn(a, t, up=2), 3, 2).sum()))
        assert grad(data, table).shape == x.shape


def test_torch_compile_fullgraph_and_opcheck():
    torch = pytest.importorskip("torch")
    fw = Torch()
    cm = fw.ops
    torch._dynamo.reset()

    @torch.compile(fullgraph=True)
    def pipeline(x, taps):
        y = cm.upfirdn(x, taps, up=3, down=2)
        return cm.resample(cm.resample_poly(y, 2, 3), 44100, 48000), cm.upfirdn(x, [0.5, 0.5])

    rng = np.random.default_rng(9)
    for device in fw.devices:
        x = torch.tensor(rng.standard_normal((2, 300)), device=device)
        taps = torch.tensor(rng.standard_normal(31), device=device)
        eager = pipeline._torchdynamo_orig_callable(x, taps)
        for compiled, expected in zip(pipeline(x, taps), eager, strict=True):
            np.testing.assert_array_equal(fw.numpy(compiled), fw.numpy(expected))
        data = x[:, :40].requires_grad_(True)
        for table_device in {device, "cpu"}:
            t = taps[:7].to(table_device).requires_grad_(True)
            torch.library.opcheck(torch.ops.constmem.upfirdn, (data, t, 3, 2))
        data32 = data.detach().float().requires_grad_(True)
        torch.library.opcheck(torch.ops.constmem.upfirdn_static, (data32, [0.5, 0.25], 1, 2))


@pytest.mark.slow  # torch.compile traced again (about 12 s): scripts/test-slow.sh
def test_torch_compile_fullgraph_with_rates_changing_between_calls():
    """Rates and filter settings that change between calls arrive symbolic when torch.compile
    traces again; each new set gives the eager call's bits, with no graph break."""
    torch = pytest.importorskip("torch")
    fw = Torch()
    cm = fw.ops
    torch._dynamo.reset()

    @torch.compile(fullgraph=True)
    def both(x, orig, new, rolloff, up, down):
        return cm.resample(x, orig, new, rolloff=rolloff), cm.resample_poly(x, up, down)

    x = torch.tensor(np.random.default_rng(4).standard_normal((2, 200)), dtype=torch.float32)
    for orig, new, rolloff, up, down in [
        (48000, 16000, 0.99, 2, 3),
        (44100, 16000, 0.9, 3, 2),
        (16000, 22050, 0.95, 160, 147),
    ]:
        compiled = both(x, orig, new, rolloff, up, down)
        eager = both._torchdynamo_orig_callable(x, orig, new, rolloff, up, down)
        for c, e in zip(compiled, eager, strict=True):
            assert c.shape == e.shape
            np.testing.assert_array_equal(c.numpy(), e.numpy())


# torchaudio.functional.resample over every ordered pair of these rates (110 pairs), with
# torchaudio's defaults and with a long Kaiser filter (up to 96,405 taps, rates up to 2,560 after
# their gcd).
AUDIO_RATES = [8000, 11025, 16000, 22050, 24000, 32000, 44100, 48000, 88200, 96000, 192000]
RATE_PAIRS = [(orig, new) for orig in AUDIO_RATES for new in AUDIO_RATES if orig != new]
SINC_SETTINGS = {
    "defaults": {},
    "kaiser_width16_rolloff085": {
        "lowpass_filter_width": 16,
        "rolloff": 0.85,
        "resampling_method": "sinc_interp_kaiser",
    },
}


def torchaudio_sinc_float64(
    x,
    orig_freq,
    new_freq,
    lowpass_filter_width=6,
    rolloff=0.99,
    resampling_method="sinc_interp_hann",
    beta=None,
):
    """torchaudio.functional.resample computed as torchaudio computes it, in float64 NumPy.

    Its _get_sinc_resample_kernel: for the rates reduced by their gcd, a kernel of shape
    [new, 2 * width + orig] (width = ceil(lowpass_filter_width * orig / base), base = min(orig,
    new) * rolloff) of windowed sincs at t = (-i / new + (j - width) / orig) * base, clamped to
    the filter's width, Hann or Kaiser; its _apply_sinc_resample_kernel: the rows padded with width
    zeros before and width + orig after, conv1d with that kernel and stride orig (each frame of
    2 * width + orig samples gives `new` outputs), the frames' outputs in order, cropped to
    ceil(new * n / orig).
    """
    g = math.gcd(orig_freq, new_freq)
    orig, new = orig_freq // g, new_freq // g
    base = min(orig, new) * rolloff
    width = math.ceil(lowpass_filter_width * orig / base)
    idx = np.arange(-width, width + orig, dtype=np.float64)[None, :] / orig
    t = np.arange(0, -new, -1, dtype=np.float64)[:, None] / new + idx
    t = np.clip(t * base, -lowpass_filter_width, lowpass_filter_width)
    if resampling_method == "sinc_interp_hann":
        window = np.cos(t * math.pi / lowpass_filter_width / 2) ** 2
    else:
        beta = 14.769656459379492 if beta is None else beta
        window = np.i0(beta * np.sqrt(1 - (t / lowpass_filter_width) ** 2)) / np.i0(beta)
    t = t * math.pi
    with np.errstate(divide="ignore", invalid="ignore"):
        kernel = np.where(t == 0, 1.0, np.sin(t) / t) * (window * (base / orig))
    x = np.asarray(x, np.float64)
    n = x.shape[-1]
    rows = x.reshape(-1, n)
    padded = np.pad(rows, [(0, 0), (width, width + orig)])
    frames = np.lib.stride_tricks.sliding_window_view(padded, 2 * width + orig, axis=-1)[:, ::orig]
    out = (frames @ kernel.T).reshape(rows.shape[0], -1)[:, : -(-new * n // orig)]
    return out.reshape((*x.shape[:-1], out.shape[-1]))


def audio_signal(orig, new):
    """Two rows of float32 in [-1, 1) with about 200 outputs at the new rate."""
    n = max(24, -(-200 * orig // new))
    rng = np.random.default_rng(orig * 7 + new)
    return rng.uniform(-1, 1, (2, n)).astype(np.float32)


@pytest.mark.parametrize("setting", sorted(SINC_SETTINGS))
@pytest.mark.parametrize(("orig", "new"), RATE_PAIRS)
def test_resample_every_audio_rate_pair_matches_torchaudios_algorithm(orig, new, setting):
    torch = pytest.importorskip("torch")
    import constmem.torch as cm

    kwargs = SINC_SETTINGS[setting]
    x = audio_signal(orig, new)
    expected = torchaudio_sinc_float64(x, orig, new, **kwargs)
    y = cm.resample(torch.from_numpy(x), orig, new, **kwargs).numpy()
    assert y.shape == expected.shape and y.dtype == np.float32
    np.testing.assert_allclose(y, expected, rtol=0, atol=1e-5)


# The pairs of the longest filters and the largest rates after the gcd, in every framework.
FRAMEWORK_PAIRS = [(192000, 11025), (11025, 192000), (88200, 32000), (44100, 48000)]


@pytest.mark.parametrize("setting", sorted(SINC_SETTINGS))
@pytest.mark.parametrize(("orig", "new"), FRAMEWORK_PAIRS)
def test_resample_is_bitwise_alike_in_every_framework(orig, new, setting):
    kwargs = SINC_SETTINGS[setting]
    x = audio_signal(orig, new)
    expected = torchaudio_sinc_float64(x, orig, new, **kwargs)
    results = {}
    if "torch" in FRAMEWORKS:
        import constmem.torch as cm
        import torch

        results["torch"] = cm.resample(torch.from_numpy(x), orig, new, **kwargs).numpy()
    if "jax" in FRAMEWORKS:
        import constmem.jax as cmj
        import jax

        run = jax.jit(lambda a: cmj.resample(a, orig, new, **kwargs))
        results["jax"] = np.asarray(run(jax.device_put(x, jax.devices("cpu")[0])))
    if importlib.util.find_spec("tensorflow") is not None:
        import constmem.tensorflow as cmt
        import tensorflow as tf

        with tf.device("/CPU:0"):
            results["tf"] = cmt.resample(tf.constant(x), orig, new, **kwargs).numpy()
            traced = tf.function(lambda a: cmt.resample(a, orig, new, **kwargs))
            results["tf.function"] = traced(tf.constant(x)).numpy()
    if not results:
        pytest.skip("needs torch, jax or tensorflow")
    first = next(iter(results.values()))
    np.testing.assert_allclose(first, expected, rtol=0, atol=1e-5)
    for name, y in results.items():
        np.testing.assert_array_equal(y, first, err_msg=name)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rolloff": 0}, "rolloff"),
        ({"rolloff": -0.5}, "rolloff"),
        ({"rolloff": 1.5}, "rolloff"),
        ({"rolloff": float("nan")}, "rolloff"),
        ({"rolloff": float("inf")}, "rolloff"),
        ({"lowpass_filter_width": 0}, "lowpass_filter_width"),
        ({"lowpass_filter_width": -3}, "lowpass_filter_width"),
        ({"lowpass_filter_width": float("inf")}, "lowpass_filter_width"),
    ],
)
def test_resample_refuses_bad_filters(fw, kwargs, message):
    x = fw.tensor(np.ones((2, 40)), fw.devices[0])
    with pytest.raises(ValueError, match=message):
        fw.ops.resample(x, 44100, 48000, **kwargs)
    with pytest.raises(ValueError, match=message):
        fw.ops.resample(x, 48000, 48000, **kwargs)


def test_resample_takes_rolloff_one_and_refuses_filters_past_the_op(fw):
    x = np.random.default_rng(1).uniform(-1, 1, (1, 300))
    y = fw.numpy(fw.ops.resample(fw.tensor(x, fw.devices[0]), 16000, 44100, rolloff=1.0))
    expected = torchaudio_sinc_float64(x, 16000, 44100, rolloff=1.0)
    np.testing.assert_allclose(y, expected, rtol=0, atol=1e-12)
    # 44,100 -> 96,001 Hz (coprime): about 2.3 million taps; resample_poly by 96,001/2: 1.9 million.
    with pytest.raises(ValueError, match="taps; upfirdn takes at most 1048576"):
        fw.ops.resample(fw.tensor(x, fw.devices[0]), 44100, 96001)
    with pytest.raises(ValueError, match="taps; upfirdn takes at most 1048576"):
        fw.ops.resample_poly(fw.tensor(x, fw.devices[0]), 96001, 2)


def low_precision(fw, values, device, dtype):
    """Values rounded to float16 or bfloat16, as a tensor of the framework on `device`."""
    data = fw.tensor(values, device, np.float32)
    if fw.name == "torch":
        return data.to(getattr(fw.torch, dtype))
    return data.astype(getattr(fw.jax.numpy, dtype))


def as_float64(fw, value):
    """Values of any dtype (NumPy has no bfloat16) in float64."""
    if fw.name == "torch":
        return fw.numpy(value.float()).astype(np.float64)
    return np.asarray(value.astype("float32"), np.float64)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_resamplers_take_float16_and_bfloat16(fw, dtype):
    """Resampled in float32 and rounded once to the data's dtype; gradients back in that dtype."""
    step = {"float16": 2.0**-10, "bfloat16": 2.0**-7}[dtype]  # the spacing of values in [1, 2)
    x = np.random.default_rng(27).uniform(-1, 1, (2, 96))
    for device in fw.devices:
        low = low_precision(fw, x, device, dtype)
        x64 = as_float64(fw, low)
        for call, expected in (
            (
                lambda a: fw.ops.resample(a, 48000, 44100),
                torchaudio_resample_float64(x64, 48000, 44100),
            ),
            (
                lambda a: fw.ops.resample_poly(a, 3, 2),
                scipy_signal.resample_poly(x64, 3, 2, axis=-1),
            ),
        ):
            y = call(low)
            assert str(y.dtype).endswith(dtype)
            in_float32 = call(low.float() if fw.name == "torch" else low.astype("float32"))
            np.testing.assert_array_equal(
                as_float64(fw, y),
                as_float64(fw, low_precision(fw, fw.numpy(in_float32), device, dtype)),
            )
            np.testing.assert_allclose(as_float64(fw, y), expected, rtol=0, atol=step)
        # The gradient of sum(resample(x)) is the adjoint applied to ones: against float64.
        ones = np.ones(x.shape)
        if fw.name == "torch":
            data = low.clone().requires_grad_(True)
            fw.ops.resample_poly(data, 3, 2).float().sum().backward()
            grad = data.grad
            exact = fw.torch.tensor(ones, requires_grad=True)
            fw.ops.resample_poly(exact, 3, 2).sum().backward()
            expected = exact.grad.numpy()
        else:
            jax = fw.jax
            grad = jax.grad(lambda a: fw.ops.resample_poly(a, 3, 2).astype("float32").sum())(low)
            expected = np.asarray(
                jax.grad(lambda a: fw.ops.resample_poly(a, 3, 2).sum())(jax.numpy.asarray(ones))
            )
        assert str(grad.dtype).endswith(dtype)
        np.testing.assert_allclose(as_float64(fw, grad), expected, rtol=0, atol=2 * step)


def test_resample_takes_torchaudios_argument_names(fw):
    x = fw.tensor(np.random.default_rng(28).standard_normal((2, 50)), fw.devices[0])
    expected = fw.numpy(fw.ops.resample(x, 3, 2))
    out = fw.ops.resample(waveform=x, orig_freq=3, new_freq=2)
    np.testing.assert_array_equal(fw.numpy(out), expected)
    with pytest.raises(TypeError, match="got 'x' and 'waveform', two names of one argument"):
        fw.ops.resample(x, 3, 2, waveform=x)
    with pytest.raises(TypeError, match="missing required argument: 'new_freq'"):
        fw.ops.resample(waveform=x, orig_freq=3)
    integers = fw.tensor(np.zeros((2, 50)), fw.devices[0], np.int32)
    with pytest.raises(
        ValueError, match=r"^waveform must be float32, float64, float16 or bfloat16"
    ):
        fw.ops.resample(waveform=integers, orig_freq=3, new_freq=2)
