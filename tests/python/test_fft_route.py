# SPDX-License-Identifier: Apache-2.0
"""FirFilter's and Upfirdn's FFT route (method="fft", and "auto" above the crossover) in every
framework: within its documented bound of scipy's float64 result, gradients equal to the direct
kernel's within that bound, "direct" and short filters bit for bit the kernel's, under jit and
vmap; its polyphase plan and sizes against their definitions."""

import importlib.util
import math
import warnings

import numpy as np
import pytest
from constmem.ops import _fft

scipy_signal = pytest.importorskip("scipy.signal")

FRAMEWORKS = [n for n in ("torch", "jax", "tensorflow") if importlib.util.find_spec(n)]


class Framework:
    def __init__(self, name):
        self.name = name
        if name == "torch":
            import constmem.torch as cm
            import torch

            self.tensor = lambda a: torch.tensor(a)
            self.on_gpu = lambda t: t.is_cuda
        elif name == "jax":
            import jax

            jax.config.update("jax_enable_x64", True)
            import constmem.jax as cm
            import jax.numpy as jnp

            self.tensor = jnp.asarray  # on JAX's default device, a GPU where there is one
            self.on_gpu = lambda t: next(iter(t.devices())).platform == "gpu"
        else:
            import constmem.tensorflow as cm
            import tensorflow as tf

            self.tensor = tf.constant
            self.on_gpu = lambda t: "GPU" in t.device
        self.cm = cm


@pytest.fixture(params=FRAMEWORKS, scope="module")
def fw(request):
    return Framework(request.param)


def _bound(x, taps, dtype, size):
    """The FFT route's documented bound: 4 eps log2(FFT size) sum|h| max|x|.

    An FFT's rounding spreads over its frame, so the bound is on the frame's largest sample, not
    each output's own terms.
    """
    eps = np.finfo(dtype).eps
    return 4 * eps * math.log2(max(size, 2)) * np.abs(taps).sum() * np.abs(x).max()


def _fir_reference(x, taps, padding):
    k = len(taps)
    before = (k - 1) // 2 if padding == "SAME" else 0
    padded = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(before, k - 1 - before)])
    if padding == "VALID":
        padded = x
    if padded.shape[-1] < k:  # VALID with more taps than samples: no outputs
        return np.zeros((*x.shape[:-1], 0))
    return scipy_signal.correlate(padded, taps[(None,) * (x.ndim - 1)], mode="valid")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "k, n, padding",
    [
        (1, 10, "SAME"),
        (2, 7, "SAME"),
        (7, 100, "VALID"),
        (64, 1000, "SAME"),
        (300, 1, "SAME"),
        (300, 400, "VALID"),
        (300, 100, "VALID"),
        (300, 310, "VALID"),  # one frame of fewer outputs than taps
        (513, 600, "SAME"),
        (33, 20000, "VALID"),  # several frames from the first sample on
        (513, 5000, "SAME"),
    ],
)
def test_fir_filter_fft_is_within_its_bound(fw, dtype, k, n, padding):
    rng = np.random.default_rng(k * 1000 + n)
    x = rng.standard_normal((2, 3, n)).astype(dtype)
    taps = rng.standard_normal(k).astype(dtype)
    y = np.asarray(fw.cm.fir_filter(fw.tensor(x), fw.tensor(taps), padding=padding, method="fft"))
    x64, taps64 = x.astype(np.float64), taps.astype(np.float64)
    exact = _fir_reference(x64, taps64, padding)
    assert y.dtype == dtype and y.shape == exact.shape
    size = _fft._fft_size(k, exact.shape[-1], "gpu" if fw.on_gpu(fw.tensor(x)) else "cpu")
    assert np.abs(y - exact).max(initial=0) <= _bound(x, taps, dtype, size)
    # A static table takes the same route with its values rounded to x's dtype.
    static = fw.cm.fir_filter(
        fw.tensor(x), list(taps.astype(np.float64)), padding=padding, method="fft"
    )
    np.testing.assert_array_equal(np.asarray(static), y)


@pytest.mark.parametrize(
    "k, up, down, n",
    [
        (31, 2, 1, 200),
        (31, 1, 2, 200),
        (31, 3, 2, 200),
        (255, 3, 2, 300),
        (9, 4, 3, 1),
        (40, 2, 3, 9),
        (4096, 7, 5, 30),
        (100, 6, 4, 50),
        (64, 1, 1, 1000),
        (5, 1, 7, 3),
    ],
)
def test_upfirdn_fft_is_scipys_within_its_bound(fw, k, up, down, n):
    rng = np.random.default_rng(k + 10 * up + 100 * down)
    x = rng.standard_normal((2, n))
    taps = rng.standard_normal(k)
    y = np.asarray(fw.cm.upfirdn(fw.tensor(x), fw.tensor(taps), up=up, down=down, method="fft"))
    exact = scipy_signal.upfirdn(taps, x, up, down, axis=-1)
    assert y.shape == exact.shape
    assert np.abs(y - exact).max() <= _bound(x, taps, np.float64, 1 << 20)
    # float32 data: within float32's bound of the float64 result.
    y32 = fw.cm.upfirdn(
        fw.tensor(x.astype(np.float32)),
        fw.tensor(taps.astype(np.float32)),
        up=up,
        down=down,
        method="fft",
    )
    y32 = np.asarray(y32)
    assert y32.dtype == np.float32
    assert np.abs(y32 - exact).max() <= _bound(x, taps, np.float32, 1 << 20)


def test_direct_and_short_filters_are_the_kernel_bit_for_bit(fw):
    rng = np.random.default_rng(3)
    x = fw.tensor(rng.standard_normal((4, 500)).astype(np.float32))
    for k in (5, _fft.SHORT_TAPS - 1):
        taps = fw.tensor(rng.standard_normal(k).astype(np.float32))
        for method in ("auto", "direct"):
            np.testing.assert_array_equal(
                np.asarray(fw.cm.fir_filter(x, taps, method=method)),
                np.asarray(fw.cm.fir_filter(x, taps, method="direct")),
            )
        reference = np.asarray(fw.cm.upfirdn(x, taps, up=3, down=2, method="direct"))
        np.testing.assert_array_equal(np.asarray(fw.cm.upfirdn(x, taps, up=3, down=2)), reference)


def test_auto_takes_the_fft_route_for_long_filters_on_long_rows(fw):
    rng = np.random.default_rng(4)
    x = fw.tensor(rng.standard_normal((2, 1 << 16)).astype(np.float32))
    taps = fw.tensor(rng.standard_normal(8192).astype(np.float32))
    auto = np.asarray(fw.cm.fir_filter(x, taps, padding="VALID"))
    fft = np.asarray(fw.cm.fir_filter(x, taps, padding="VALID", method="fft"))
    np.testing.assert_array_equal(auto, fft)


def test_auto_counts_a_few_long_outputs_as_a_full_device(fw):
    # One output of 2^18 taps: its multiply-adds run one after another in the direct kernel, so on
    # a GPU it costs what 2^17 outputs do and the FFT route wins (measured on an H100: 69 ms
    # direct, 0.75 ms FFT at 2^20 taps); a CPU, whose few lanes it fills, keeps the direct kernel.
    from constmem.ops import _fft

    k = 1 << 18
    chosen = {}
    for device in ("cpu", "gpu"):
        work = _fft.fft_work(1, 1, 1, k, 1, device)
        chosen[device] = "fft" if _fft.fft_is_cheaper(device, 1, k, work) else "direct"
    assert chosen == {"cpu": "direct", "gpu": "fft"}
    rng = np.random.default_rng(6)
    x = fw.tensor(rng.standard_normal((1, k)).astype(np.float32))
    taps = fw.tensor(rng.standard_normal(k).astype(np.float32))
    auto = np.asarray(fw.cm.fir_filter(x, taps, padding="VALID"))
    device = "gpu" if fw.on_gpu(x) else "cpu"
    want = np.asarray(fw.cm.fir_filter(x, taps, padding="VALID", method=chosen[device]))
    np.testing.assert_array_equal(auto, want)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_the_fft_route_on_16_bit_data_is_the_float32_route_rounded_once(fw, dtype):
    # As the kernels compute 16-bit data: in float32, each result rounded once.
    from constmem.ops._functions import cast, dtype_name

    rng = np.random.default_rng(8)
    x = cast(fw.tensor(rng.standard_normal((2, 3000)).astype(np.float32)), dtype)
    taps = fw.tensor(rng.standard_normal(700).astype(np.float32))
    wide = cast(x, "float32")
    calls = [
        lambda a, t: fw.cm.fir_filter(a, t, method="fft"),
        lambda a, t: fw.cm.upfirdn(a, t, up=3, down=2, method="fft"),
        lambda a, t: fw.cm.upfirdn(a, t.tolist() if hasattr(t, "tolist") else t, method="fft"),
    ]
    for call in calls:
        got, want = call(x, taps), cast(call(wide, taps), dtype)
        assert dtype_name(got) == dtype
        np.testing.assert_array_equal(
            np.asarray(cast(got, "float32")), np.asarray(cast(want, "float32"))
        )


def test_a_bad_method_is_refused_by_name(fw):
    x = fw.tensor(np.zeros((2, 100), np.float32))
    taps = list(np.ones(64))
    for bad in ("FFT", "overlap", 1):
        with pytest.raises(ValueError, match="method must be one of auto/direct/fft"):
            fw.cm.fir_filter(x, taps, method=bad)
        with pytest.raises(ValueError, match="method must be one of auto/direct/fft"):
            fw.cm.upfirdn(x, taps, up=2, method=bad)


def test_bad_input_on_the_fft_route_is_the_ops_error(fw):
    x = fw.tensor(np.zeros((2, 100), np.float32))
    with pytest.raises(Exception, match="taps"):
        fw.cm.fir_filter(x, fw.tensor(np.zeros((2, 64), np.float32)), method="fft")
    with pytest.raises(Exception, match="padding"):
        fw.cm.fir_filter(x, list(np.ones(64)), padding="FULL", method="fft")
    with pytest.raises(Exception, match="up"):
        fw.cm.upfirdn(x, list(np.ones(64)), up=0, method="fft")


@pytest.mark.skipif("torch" not in FRAMEWORKS, reason="PyTorch is not installed")
def test_torch_gradients_through_the_fft_route_are_the_direct_kernels():
    import constmem.torch as cm
    import torch

    rng = np.random.default_rng(5)
    for call in (
        lambda x, t, m: cm.fir_filter(x, t, padding="SAME", method=m),
        lambda x, t, m: cm.upfirdn(x, t, up=3, down=2, method=m),
    ):
        grads = {}
        for method in ("direct", "fft"):
            x = torch.tensor(rng.standard_normal((2, 300)), requires_grad=True)
            t = torch.tensor(rng.standard_normal(97), requires_grad=True)
            with torch.no_grad():
                x.copy_(torch.tensor(np.random.default_rng(6).standard_normal((2, 300))))
                t.copy_(torch.tensor(np.random.default_rng(7).standard_normal(97)))
            weights = torch.tensor(
                np.random.default_rng(8).standard_normal(call(x, t, "direct").shape)
            )
            (call(x, t, method) * weights).sum().backward()
            grads[method] = (x.grad.numpy(), t.grad.numpy())
        for a, b in zip(grads["direct"], grads["fft"], strict=True):
            np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-11)


@pytest.mark.skipif("jax" not in FRAMEWORKS, reason="JAX is not installed")
def test_jax_fft_route_under_jit_grad_and_vmap():
    import constmem.jax as cm
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(9)
    x = jnp.asarray(rng.standard_normal((3, 400)))
    taps = jnp.asarray(rng.standard_normal(129))

    def loss(x, taps, method):
        return jnp.sum(jnp.sin(cm.upfirdn(x, taps, up=2, down=3, method=method)))

    direct = jax.grad(loss, (0, 1))(x, taps, "direct")
    fft = jax.jit(jax.grad(loss, (0, 1)), static_argnums=2)(x, taps, "fft")
    for a, b in zip(direct, fft, strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-11)
    mapped = jax.vmap(lambda row: cm.fir_filter(row, taps, method="fft"))(x)
    np.testing.assert_allclose(mapped, cm.fir_filter(x, taps, method="direct"), rtol=0, atol=1e-12)


def test_the_polyphase_plan_is_upfirdns_definition():
    """polyphase_convolve's phases, over NumPy, against the definition summed term by term."""

    class NumpyArrays:
        def __getattr__(self, name):
            return getattr(np, name)

        @staticmethod
        def rfft(t, n):
            return np.fft.rfft(t, n, axis=-1)

        @staticmethod
        def irfft(t, n):
            return np.fft.irfft(t, n, axis=-1)

        @staticmethod
        def pad_last(t, before, after):
            return np.pad(t, [(0, 0)] * (t.ndim - 1) + [(before, after)])

        @staticmethod
        def length(t):
            return t.shape[0]

        @staticmethod
        def zeros(n, like):
            return np.zeros(n, like.dtype)

        @staticmethod
        def concat(vectors):
            return np.concatenate(vectors)

        @staticmethod
        def take(t, indices, axis):
            return np.take(t, indices, axis)

        @staticmethod
        def flip(t):
            return t[::-1]

    F = NumpyArrays()
    rng = np.random.default_rng(10)
    for k, up, down, n in [(17, 3, 2, 40), (50, 4, 6, 33), (8, 1, 5, 61), (3, 5, 1, 4)]:
        x = rng.standard_normal((1, n))
        taps = rng.standard_normal(k)
        outputs = ((n - 1) * up + k - 1) // down + 1
        y = _fft.upfirdn(F, x, taps, up, down, outputs)
        definition = np.zeros(outputs)
        for i in range(outputs):
            for t in range(n):
                j = i * down - t * up
                if 0 <= j < k:
                    definition[i] += x[0, t] * taps[j]
        np.testing.assert_allclose(y[0], definition, rtol=0, atol=1e-12)


def test_auto_keeps_short_rows_on_the_direct_kernel(fw):
    # A row of 480 samples resampled with 37 taps is a few microseconds of one launch in the direct
    # kernel and several of the framework's operations by FFT, on every device.
    from constmem.ops import _fft

    for device in ("cpu", "gpu"):
        work = _fft.fft_work(1, 1, 3, 13, 160, device)
        assert not _fft.fft_is_cheaper(device, 160, 37, work)
    x = fw.tensor(np.random.default_rng(3).standard_normal((1, 480)).astype(np.float32))
    auto = np.asarray(fw.cm.resample(x, 48000, 16000))
    direct = np.asarray(fw.cm.resample(x, 48000, 16000, method="direct"))
    np.testing.assert_array_equal(auto, direct)


def test_frames_hold_only_the_samples_the_outputs_need():
    # VALID outputs start at the filter's last tap: one output of k taps is one frame of k samples
    # (not the 2k - 1 of the full convolution). One frame for a whole row is taken on a GPU where
    # it takes fewer butterflies than overlap-save's frames, on a CPU only where it is shorter; a
    # CPU's frames stay within its caches where the filter allows.
    from constmem.ops import _fft

    k = 1 << 16
    outputs = (1 << 20) - k + 1
    for device in ("cpu", "gpu"):
        assert _fft._fft_size(k, 1, device) == k
        assert _fft._fft_size(64, 1 << 20, device) == _fft._SMALLEST_FFT  # short frames
    assert _fft._fft_size(k, outputs, "gpu") == 1 << 20
    assert _fft._fft_size(k, outputs, "cpu") == _fft._CPU_FRAME_CAP == 1 << 17
    assert _fft._fft_size(1 << 12, 1 << 20, "cpu") == 1 << 15  # eight times the filter
    assert _fft._fft_size(1 << 18, (1 << 20) - (1 << 18) + 1, "cpu") == 1 << 19  # twice
    for extent, length in [(64, 1 << 20), (1 << 12, 1 << 20), (1 << 14, 1 << 20), (k, outputs)]:
        size = _fft._fft_size(extent, length, "gpu")
        frames = -(-length // (size - extent + 1))
        whole = _fft.fast_length(length + extent - 1)
        assert frames * size * np.log2(size) <= whole * np.log2(whole)


def test_fast_lengths_are_the_least_five_smooth_sizes():
    smooth = sorted(2**a * 3**b * 5**c for a in range(22) for b in range(14) for c in range(10))
    for n in [*range(1, 600), 327679, 1048577]:
        assert _fft.fast_length(n) == next(s for s in smooth if s >= n)


@pytest.mark.skipif("tensorflow" not in FRAMEWORKS, reason="TensorFlow is not installed")
def test_tensorflow_fft_route_under_xla_with_gradients():
    import constmem.tensorflow as cm
    import tensorflow as tf

    rng = np.random.default_rng(11)
    x = tf.constant(rng.standard_normal((2, 600)))
    taps = tf.Variable(rng.standard_normal(150))

    def loss(method):
        with tf.GradientTape() as tape:
            tape.watch(x)
            value = tf.reduce_sum(tf.sin(cm.upfirdn(x, taps, up=3, down=4, method=method)))
        return (value, *tape.gradient(value, [x, taps]))

    direct = loss("direct")
    compiled = tf.function(lambda: loss("fft"), jit_compile=True)()
    for a, b in zip(direct, compiled, strict=True):
        np.testing.assert_allclose(
            tf.convert_to_tensor(b).numpy(), tf.convert_to_tensor(a).numpy(), rtol=1e-9, atol=1e-11
        )


@pytest.mark.slow  # torch.compile's first trace (about 20 s): scripts/test-slow.sh
@pytest.mark.skipif("torch" not in FRAMEWORKS, reason="PyTorch is not installed")
def test_torch_compile_traces_the_fft_route_fullgraph():
    import constmem.torch as cm
    import torch

    rng = np.random.default_rng(12)
    x = torch.tensor(rng.standard_normal((2, 700)), requires_grad=True)
    taps = torch.tensor(rng.standard_normal(200), requires_grad=True)

    def step(x, taps):
        return cm.fir_filter(x, taps, method="fft").sin().sum()

    compiled = torch.compile(step, fullgraph=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = compiled(x, taps)
        # "auto" asks the work model, whose answers are cached for eager calls.
        chosen = torch.compile(lambda x, t: cm.fir_filter(x, t, method="auto"), fullgraph=True)
        chosen(x.detach(), taps.detach())
    cache_warnings = [str(w.message) for w in caught if "lru_cache" in str(w.message)]
    assert not cache_warnings, cache_warnings
    value.backward()
    grads = (x.grad.clone(), taps.grad.clone())
    x.grad = taps.grad = None
    expected = cm.fir_filter(x, taps, method="direct").sin().sum()
    expected.backward()
    torch.testing.assert_close(value, expected, rtol=1e-9, atol=1e-11)
    for got, want in zip(grads, (x.grad, taps.grad), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-11)
    # The polyphase route, whose tap tables are made from index arrays while it is traced.
    x, taps = x.detach(), taps.detach()
    resampled = torch.compile(
        lambda x, t: cm.upfirdn(x, t, up=3, down=2, method="fft"), fullgraph=True
    )
    want = cm.upfirdn(x, taps, up=3, down=2, method="direct")
    torch.testing.assert_close(resampled(x, taps), want, rtol=1e-9, atol=1e-11)


def test_the_resamplers_take_the_method(fw):
    rng = np.random.default_rng(13)
    x = rng.standard_normal((2, 3000))
    fft = np.asarray(fw.cm.resample_poly(fw.tensor(x), 3, 2, method="fft"))
    expected = scipy_signal.resample_poly(x, 3, 2, axis=-1)
    assert fft.shape == expected.shape
    np.testing.assert_allclose(fft, expected, rtol=0, atol=1e-12)
    direct = np.asarray(fw.cm.resample(fw.tensor(x), 48000, 44100, method="direct"))
    fft = np.asarray(fw.cm.resample(fw.tensor(x), 48000, 44100, method="fft"))
    np.testing.assert_allclose(fft, direct, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="method must be one of"):
        fw.cm.resample_poly(fw.tensor(x), 3, 2, method="overlap-add")
