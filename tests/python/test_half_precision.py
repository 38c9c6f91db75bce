# SPDX-License-Identifier: Apache-2.0
"""float16 and bfloat16 data are native dtypes of every op that takes float data.

Each op reads and writes them itself and computes in float32, so a call equals, bit for bit, the
float32 call on the data cast to float32 with its result cast back (round to nearest even), in
PyTorch, JAX and TensorFlow alike; gradients are the float32 call's, the data's cast back.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

FRAMEWORKS = [n for n in ("torch", "jax", "tensorflow") if importlib.util.find_spec(n) is not None]


def _devices() -> list[tuple[str, str]]:
    """(framework, device) for every framework installed, on the CPU and on a GPU where one is."""
    found = []
    if "torch" in FRAMEWORKS:
        import torch

        found += [("torch", "cpu")] + ([("torch", "cuda")] if torch.cuda.is_available() else [])
    if "jax" in FRAMEWORKS:
        import jax

        gpu = any(d.platform == "gpu" for d in jax.devices())
        found += [("jax", "cpu")] + ([("jax", "gpu")] if gpu else [])
    if "tensorflow" in FRAMEWORKS:
        found.append(("tensorflow", "cpu"))
    return found


HALVES = ("float16", "bfloat16")
# The ops that take float data, and so 16-bit floats.
FLOAT_OPS = ("polyval", "fir_filter", "interpolate", "separable_filter", "upfirdn")


class Torch:
    def __init__(self, device="cpu"):
        import constmem.torch as cm
        import torch

        self.torch, self.cm, self.device = torch, cm, device

    def array(self, values, dtype):
        t = self.torch.tensor(np.asarray(values, np.float32), device=self.device)
        return t.to(getattr(self.torch, dtype))

    def cast(self, t, dtype):
        return t.to(getattr(self.torch, dtype))

    def numpy(self, t):
        return (t.float() if t.dtype == self.torch.bfloat16 else t).cpu().numpy()

    def dtype(self, t):
        return str(t.dtype).removeprefix("torch.")

    def reshape(self, t, shape):
        return t.reshape(shape)


class Jax:
    def __init__(self, device="cpu"):
        import constmem.jax as cm
        import jax
        import jax.numpy as jnp

        self.jax, self.jnp, self.cm = jax, jnp, cm
        self.device = jax.devices(device)[0]

    def array(self, values, dtype):
        x = self.jax.device_put(np.asarray(values, np.float32), self.device)
        return x.astype(dtype)

    def cast(self, t, dtype):
        return t.astype(dtype)

    def numpy(self, t):
        return np.asarray(t.astype("float32")) if t.dtype.name == "bfloat16" else np.asarray(t)

    def dtype(self, t):
        return t.dtype.name

    def reshape(self, t, shape):
        return t.reshape(shape)


class Tensorflow:
    def __init__(self, device="cpu"):
        import constmem.tensorflow as cm
        import tensorflow as tf

        self.tf, self.cm = tf, cm

    def array(self, values, dtype):
        return self.tf.cast(self.tf.constant(np.asarray(values, np.float32)), dtype)

    def cast(self, t, dtype):
        return self.tf.cast(t, dtype)

    def numpy(self, t):
        return self.tf.cast(t, "float32").numpy() if t.dtype.name == "bfloat16" else t.numpy()

    def dtype(self, t):
        return t.dtype.name

    def reshape(self, t, shape):
        return self.tf.reshape(t, shape)


MAKERS = {"torch": Torch, "jax": Jax, "tensorflow": Tensorflow}


@pytest.fixture(scope="module", params=_devices(), ids="-".join)
def fw(request):
    name, device = request.param
    return MAKERS[name](device)


def special_halves(n: int, rng) -> np.ndarray:
    """Values of every kind a 16-bit float holds: normal, subnormal, zeros, extremes, Inf, NaN."""
    values = rng.standard_normal(n).astype(np.float32) * 4
    values[::17] = 6.0e-8  # float16's smallest subnormal
    values[3::29] = -0.0
    values[5::31] = 65504.0  # float16's largest: a filter's sum overflows it
    values[7::37] = np.inf
    values[11::41] = np.nan
    return values


def assert_bitwise(fw, got, want):
    assert fw.dtype(got) == fw.dtype(want)
    g, w = fw.numpy(got), fw.numpy(want)
    nan = np.isnan(w)
    np.testing.assert_array_equal(np.isnan(g), nan)
    assert g[~nan].tobytes() == w[~nan].tobytes()


def test_every_float_op_lists_the_16_bit_floats(fw):
    for op in FLOAT_OPS:
        dtypes = fw.cm.OPS[op].data_dtypes()
        assert "float16" in dtypes and "bfloat16" in dtypes, (op, dtypes)


CASES = {
    "polyval": lambda fw, x: fw.cm.polyval([0.5, -1.25, 3.0], x),
    "fir_filter": lambda fw, x: fw.cm.fir_filter(
        fw.reshape(x, (4, 96)), [0.25, 0.5, -0.125, 1.0, 0.3]
    ),
    "interpolate": lambda fw, x: fw.cm.interpolate(x, [0.0, 1.0, -2.0, 4.0, 0.5], -3.0, 3.0),
    "upfirdn": lambda fw, x: fw.cm.upfirdn(
        fw.reshape(x, (4, 96)), [0.2, 0.3, 0.5, -0.1], up=3, down=2
    ),
    "separable_filter": lambda fw, x: fw.cm.separable_filter(
        fw.reshape(x, (2, 2, 8, 12)),
        [0.25, 0.5, 0.25],
        [0.1, 0.2, 0.4, 0.2, 0.1],
        border="replicate",
    ),
}


@pytest.mark.parametrize("dtype", HALVES)
@pytest.mark.parametrize("op", sorted(CASES))
def test_a_call_equals_the_float32_call_cast_back(fw, op, dtype):
    rng = np.random.default_rng(7)
    x = fw.array(special_halves(4 * 96, rng), dtype)
    got = CASES[op](fw, x)
    want = fw.cast(CASES[op](fw, fw.cast(x, "float32")), dtype)
    assert_bitwise(fw, got, want)


@pytest.mark.parametrize("dtype", HALVES)
def test_the_functions_on_16_bit_data_equal_the_float32_path(fw, dtype):
    rng = np.random.default_rng(3)
    images = fw.array(rng.uniform(0, 1, (2, 3, 20, 24)), dtype)
    for k in (3, 5, 9):
        got = fw.cm.gaussian_blur(images, [k, k], [1.5, 1.5])
        want = fw.cast(fw.cm.gaussian_blur(fw.cast(images, "float32"), [k, k], [1.5, 1.5]), dtype)
        assert_bitwise(fw, got, want)
    audio = fw.array(rng.standard_normal((3, 480)), dtype)
    for orig, new in ((48000, 16000), (16000, 44100)):
        got = fw.cm.resample(audio, orig, new)
        want = fw.cast(fw.cm.resample(fw.cast(audio, "float32"), orig, new), dtype)
        assert_bitwise(fw, got, want)


def half_bits(values: np.ndarray, dtype: str) -> np.ndarray:
    """float32 values rounded to nearest even as the bits of `dtype` (a NaN as the quiet NaN)."""
    if dtype == "float16":
        return values.astype(np.float16).view(np.uint16)
    bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(values), np.uint16(0x7FC0), rounded)


def from_bits(fw, bits: np.ndarray, dtype: str):
    """A framework's 16-bit tensor of `bits` exactly (the frameworks' casts of a NaN differ)."""
    if isinstance(fw, Torch):
        signed = fw.torch.from_numpy(bits.view(np.int16).copy()).to(fw.device)
        return signed.view(getattr(fw.torch, dtype))
    if isinstance(fw, Jax):  # on the framework's device: JAX's default may be a GPU
        return fw.jax.lax.bitcast_convert_type(fw.jax.device_put(bits, fw.device), dtype)
    return fw.tf.bitcast(fw.tf.constant(bits), dtype)


@pytest.mark.parametrize("dtype", HALVES)
def test_the_frameworks_agree_bit_for_bit(dtype):
    if len(FRAMEWORKS) < 2:
        pytest.skip("one framework installed")
    rng = np.random.default_rng(11)
    bits = half_bits(special_halves(2 * 64, rng), dtype)
    results = []
    for name in FRAMEWORKS:
        fw = MAKERS[name]()
        x = fw.reshape(from_bits(fw, bits, dtype), (2, 64))
        y = fw.cm.fir_filter(x, [0.25, 0.5, -0.125, 1.0, 0.3])
        results.append(fw.numpy(y).tobytes())
    assert all(r == results[0] for r in results), FRAMEWORKS


@pytest.mark.parametrize("dtype", HALVES)
def test_torch_gradients_are_the_float32_calls_cast_back(dtype):
    torch = pytest.importorskip("torch")
    import constmem.torch as cm

    rng = np.random.default_rng(5)
    x32 = torch.tensor(rng.standard_normal((3, 50)), dtype=torch.float32)
    x = x32.to(getattr(torch, dtype)).requires_grad_()
    taps = torch.tensor([0.2, -0.5, 1.0, 0.25], requires_grad=True)
    y = cm.fir_filter(x, taps)
    assert y.dtype == x.dtype
    grad = torch.tensor(rng.standard_normal((3, 50)), dtype=torch.float32).to(x.dtype)
    gx, gt = torch.autograd.grad(y, (x, taps), grad)
    x_ref = x.detach().clone().requires_grad_()
    taps_ref = taps.detach().clone().requires_grad_()
    y_ref = cm.fir_filter(x_ref.float(), taps_ref).to(x.dtype)
    gx_ref, gt_ref = torch.autograd.grad(y_ref, (x_ref, taps_ref), grad)
    assert gx.dtype == x.dtype and gt.dtype == torch.float32
    assert torch.equal(gx, gx_ref) and torch.equal(gt, gt_ref)


@pytest.mark.parametrize("dtype", HALVES)
def test_jax_gradients_are_the_float32_calls_cast_back(dtype):
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    import constmem.jax as cm

    rng = np.random.default_rng(5)
    x = jnp.asarray(rng.standard_normal((3, 50)), jnp.float32).astype(dtype)
    taps = jnp.asarray([0.2, -0.5, 1.0, 0.25], jnp.float32)

    def loss(x, taps):
        return cm.fir_filter(x, taps).astype(jnp.float32).sum()

    def loss_ref(x, taps):
        return cm.fir_filter(x.astype(jnp.float32), taps).astype(x.dtype).astype(jnp.float32).sum()

    gx, gt = jax.grad(loss, (0, 1))(x, taps)
    gx_ref, gt_ref = jax.grad(loss_ref, (0, 1))(x, taps)
    assert gx.dtype == x.dtype and gt.dtype == jnp.float32
    np.testing.assert_array_equal(np.asarray(gx, np.float32), np.asarray(gx_ref, np.float32))
    np.testing.assert_array_equal(np.asarray(gt), np.asarray(gt_ref))
    assert float(jnp.abs(gt).sum()) > 0  # a real gradient, not zeros
