# SPDX-License-Identifier: Apache-2.0
"""SeparableFilter in PyTorch and JAX (no TensorFlow: this file runs where it is absent).

Against scipy.ndimage.correlate1d applied along W then H in float64, for every border, both
layouts, shared and per-image tables, uint8 rounding, filters of any length (past the GPU's fused
kernel and the constant bank, longer than the image); gaussian_blur against torchvision's formula
and its refusals; gradients against finite differences; opcheck, torch.compile, jax.jit, vmap and
grad. TensorFlow, where it is installed, for the long filters.
"""

import importlib.util

import numpy as np
import pytest

scipy_ndimage = pytest.importorskip("scipy.ndimage")

MODES = {"zeros": "constant", "reflect": "mirror", "replicate": "nearest"}
FRAMEWORKS = [name for name in ("torch", "jax") if importlib.util.find_spec(name) is not None]


def correlate(x, taps, axis, border):
    """scipy's correlate1d with the op's centre (k - 1) // 2 (origin -1 for even k)."""
    k = len(taps)
    return scipy_ndimage.correlate1d(
        x,
        np.asarray(taps, np.float64),
        axis=axis,
        mode=MODES[border],
        cval=0.0,
        origin=-1 if k % 2 == 0 else 0,
    )


def reference(images, row, column, border, layout, per_image=False):
    """The filter in float64: rows (W) then columns (H), per image where the taps are."""
    x = np.asarray(images, np.float64)
    h_axis, w_axis = (-3, -2) if layout == "channels_last" else (-2, -1)
    if not per_image:
        return correlate(correlate(x, row, w_axis, border), column, h_axis, border)
    flat = x.reshape(-1, *x.shape[-3:])
    out = np.stack(
        [
            correlate(correlate(img, r, w_axis, border), c, h_axis, border)
            for img, r, c in zip(flat, row, column, strict=True)
        ]
    )
    return out.reshape(x.shape)


class Framework:
    def __init__(self, name):
        self.name = name
        if name == "torch":
            import constmem.torch as cm
            import torch

            self.devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
            self.array = lambda v, device, dtype=None: torch.as_tensor(
                np.asarray(v, dtype), device=device
            )
        else:
            import constmem.jax as cm
            import jax

            jax.config.update("jax_enable_x64", True)
            self.devices = jax.devices("cpu") + [d for d in jax.devices() if d.platform == "gpu"]
            self.array = lambda v, device, dtype=None: jax.device_put(np.asarray(v, dtype), device)
        self.cm = cm

    def numpy(self, t):
        return np.asarray(t.cpu() if self.name == "torch" else t)

    def cast(self, t, dtype):
        """t in the dtype named (float16, bfloat16, ...), as the framework casts."""
        if self.name == "torch":
            import torch

            return t.to(getattr(torch, dtype))
        import jax.numpy as jnp

        return t.astype(getattr(jnp, dtype))

    def float64(self, t):
        """t's values in float64 NumPy, whatever its dtype (NumPy has no bfloat16)."""
        return self.numpy(self.cast(t, "float32")).astype(np.float64)


@pytest.fixture(params=FRAMEWORKS, scope="module")
def fw(request):
    return Framework(request.param)


def taps(rng, k):
    return rng.uniform(-1.0, 1.0, k)


@pytest.mark.parametrize("border", ["reflect", "zeros", "replicate"])
@pytest.mark.parametrize("layout", ["channels_first", "channels_last"])
def test_matches_scipy_every_border_and_layout(fw, border, layout):
    rng = np.random.default_rng(1)
    shape = (2, 3, 13, 17) if layout == "channels_first" else (2, 13, 17, 3)
    x = rng.standard_normal(shape)
    # Odd and even lengths, and a kernel larger than the image (folded again and again).
    for kw, kh in ((3, 5), (4, 2), (1, 7), (31, 29)):
        row, column = taps(rng, kw), taps(rng, kh)
        expected = reference(x, row, column, border, layout)
        for device in fw.devices:
            for dtype, tol in (("float32", 2e-5), ("float64", 1e-12)):
                r, c = row.astype(dtype), column.astype(dtype)
                # Each table in its own form: both static, both tensors, one of each.
                for forms in (
                    (r, c),
                    (fw.array(r, device), fw.array(c, device)),
                    (r, fw.array(c, device)),
                ):
                    y = fw.cm.separable_filter(
                        fw.array(x, device, dtype), *forms, border=border, layout=layout
                    )
                    scale = np.abs(row).sum() * np.abs(column).sum() * np.abs(x).max()
                    np.testing.assert_allclose(fw.numpy(y), expected, atol=tol * scale)
                    assert str(y.dtype).endswith(dtype)


def test_gaussian_blur_per_image_sigma(fw):
    """A (B, 2) sigma tensor blurs each image as its own (sigma_x, sigma_y) does, taps made on
    the images' device, for kernels of one size and of two."""
    x = np.random.default_rng(5).random((2, 3, 12, 10))
    sigmas = np.array([[0.7, 1.3], [2.0, 0.9]])
    for device in fw.devices:
        for dtype, size in [(d, s) for d in ("float32", "float64") for s in ([5, 7], 5)]:
            images = fw.array(x, device, dtype)
            out = fw.numpy(fw.cm.gaussian_blur(images, size, fw.array(sigmas, device)))
            for b in range(2):
                single = fw.cm.gaussian_blur(
                    fw.array(x[b : b + 1], device, dtype), size, sigmas[b].tolist()
                )
                tol = 2e-6 if dtype == "float32" else 1e-13
                np.testing.assert_allclose(out[b], fw.numpy(single)[0], atol=tol)


@pytest.mark.parametrize("layout", ["channels_first", "channels_last"])
def test_per_image_tables(fw, layout):
    rng = np.random.default_rng(2)
    shape = (2, 2, 2, 9, 11) if layout == "channels_first" else (2, 2, 9, 11, 2)
    x = rng.standard_normal(shape)
    images = 4
    kw, kh = 3, 4
    rows, columns = rng.uniform(-1, 1, (images, kw)), rng.uniform(-1, 1, (images, kh))
    expected = reference(x, rows, columns, "reflect", layout, per_image=True)
    for device in fw.devices:
        y = fw.cm.separable_filter2d(fw.array(x, device), rows, columns, layout=layout)
        np.testing.assert_allclose(fw.numpy(y), expected, atol=1e-12)
        y = fw.cm.separable_filter(
            fw.array(x, device),
            fw.array(rows.reshape(-1), device),
            fw.array(columns.reshape(-1), device),
            taps="per_image",
            layout=layout,
        )
        np.testing.assert_allclose(fw.numpy(y), expected, atol=1e-12)
    with pytest.raises(
        ValueError, match="column_taps must have the same number of taps for each of the 4 images"
    ):
        fw.cm.separable_filter(
            fw.array(x, "cpu" if fw.name == "torch" else fw.devices[0]),
            list(range(images * kw)),
            list(range(images * kh + 1)),
            taps="per_image",
            layout=layout,
        )


def test_uint8_rounds_half_to_even_and_clamps(fw):
    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, (2, 3, 10, 12)).astype(np.uint8)
    row = np.array([0.25, 0.5, 0.25], np.float32)
    column = np.array([-0.5, 2.0, -0.5], np.float32)  # over- and undershoots: clamped
    expected = reference(
        x, row.astype(np.float64), column.astype(np.float64), "reflect", "channels_first"
    )
    expected = np.clip(np.round(expected), 0, 255)  # np.round: half to even
    for device in fw.devices:
        y = fw.cm.separable_filter2d(fw.array(x, device), row, column)
        out = fw.numpy(y)
        assert out.dtype == np.uint8
        # float32 arithmetic may land on the other side of a .5 boundary: at most one step.
        assert np.abs(out.astype(np.int64) - expected).max() <= 1
        assert np.mean(out == expected) > 0.99
        # Exact halves round to even: 0.5, 1.5, 2.5, 3.5 -> 0, 2, 2, 4.
        halves = fw.array(np.array([[[1, 2, 3, 4]]], np.uint8), device)
        y = fw.cm.separable_filter2d(halves, [0.5, 0.5, 0.0], [1.0], border="zeros")
        np.testing.assert_array_equal(fw.numpy(y), [[[0, 2, 2, 4]]])


def torchvision_blur(x, kernel_size, sigma):
    """torchvision.transforms.v2.functional.gaussian_blur's arithmetic (2-D kernel, conv2d)."""
    import torch

    try:
        from torchvision.transforms.v2.functional import gaussian_blur

        return gaussian_blur(x, kernel_size, sigma)
    except ImportError:
        pass
    kx, ky = kernel_size
    fp = x.is_floating_point()
    dtype = x.dtype if fp else torch.float32

    def kernel1d(k, s):
        lim = (k - 1) / (2.0 * np.sqrt(2.0))
        t = torch.linspace(-lim, lim, steps=k, dtype=dtype).view(1, -1)
        return torch.softmax(t.div(s).pow(2).neg(), dim=1)

    kernel = kernel1d(ky, sigma[1]).T @ kernel1d(kx, sigma[0])
    c = x.shape[-3]
    out = x if fp else x.to(torch.float32)
    out = torch.nn.functional.pad(out, [kx // 2, kx // 2, ky // 2, ky // 2], mode="reflect")
    out = torch.nn.functional.conv2d(out, kernel.expand(c, 1, ky, kx), groups=c)
    return out if fp else out.round_().to(x.dtype)


def test_gaussian_blur_matches_torchvision():
    torch = pytest.importorskip("torch")
    import constmem.torch as cm

    rng = np.random.default_rng(4)
    x = torch.as_tensor(rng.uniform(0, 1, (2, 3, 20, 24)).astype(np.float32))
    for kernel_size, sigma in (((5, 5), None), ((3, 9), (0.8, 2.5)), ((7, 7), 1.5)):
        ks = list(kernel_size)
        sig = [k * 0.15 + 0.35 for k in ks] if sigma is None else sigma
        sig = [sig, sig] if isinstance(sig, float) else list(sig)
        expected = torchvision_blur(x, ks, sig)
        np.testing.assert_allclose(
            cm.gaussian_blur(x, ks, sigma).numpy(), expected.numpy(), atol=2e-6
        )
    u8 = torch.as_tensor(rng.integers(0, 256, (3, 16, 18)).astype(np.uint8))
    expected = torchvision_blur(u8[None], [5, 5], [1.1, 1.1])[0]
    out = cm.gaussian_blur(u8, 5, 1.1)
    assert out.dtype == torch.uint8
    assert (out.int() - expected.int()).abs().max() <= 1
    # Per-image sigma (B, 2): image b as a blur of its own.
    sigmas = torch.tensor([[0.7, 1.3], [2.0, 0.9]])
    out = cm.gaussian_blur(x, [5, 7], sigmas)
    for b in range(2):
        single = cm.gaussian_blur(x[b : b + 1], [5, 7], sigmas[b].tolist())
        np.testing.assert_allclose(out[b : b + 1].numpy(), single.numpy(), atol=1e-6)
    out5 = cm.gaussian_blur(x, 5)
    with pytest.raises(ValueError, match="odd and positive"):
        cm.gaussian_blur(x, 4)
    for size in ("9", 9.0, (3, "5"), True):  # refused, not converted
        with pytest.raises(TypeError, match="kernel_size must be an odd positive integer"):
            cm.gaussian_blur(x, size)
    np.testing.assert_array_equal(cm.gaussian_blur(x, np.int64(5)).numpy(), out5.numpy())


@pytest.mark.parametrize("border", ["reflect", "zeros", "replicate"])
def test_gradients_match_finite_differences_torch(border):
    torch = pytest.importorskip("torch")
    import constmem.torch as cm

    rng = np.random.default_rng(5)
    for layout, shape in (("channels_first", (2, 1, 5, 6)), ("channels_last", (2, 5, 4, 2))):
        x = torch.tensor(rng.standard_normal(shape), requires_grad=True)
        row = torch.tensor(rng.uniform(-1, 1, 3), requires_grad=True)
        column = torch.tensor(rng.uniform(-1, 1, 4), requires_grad=True)
        torch.autograd.gradcheck(
            lambda x, r, c, layout=layout: cm.separable_filter(
                x, r, c, border=border, layout=layout
            ),
            (x, row, column),
        )
        rows = torch.tensor(rng.uniform(-1, 1, 2 * 2), requires_grad=True)
        columns = torch.tensor(rng.uniform(-1, 1, 2 * 7), requires_grad=True)
        torch.autograd.gradcheck(
            lambda x, r, c, layout=layout: cm.separable_filter(
                x, r, c, taps="per_image", border=border, layout=layout
            ),
            (x, rows, columns),
        )
        # A gradient to one table alone (the other static).
        torch.autograd.gradcheck(
            lambda x, c, layout=layout: cm.separable_filter(
                x, [0.25, 0.5, 0.25], c, border=border, layout=layout
            ),
            (x, column),
        )


@pytest.mark.slow
def test_opcheck_and_compile():
    torch = pytest.importorskip("torch")
    import constmem.torch as cm

    x = torch.randn(2, 3, 8, 9)
    row, column = torch.randn(3), torch.randn(5)
    for args in (
        (x, row, column, "shared", "reflect", "channels_first"),
        (x, torch.randn(6), torch.randn(10), "per_image", "zeros", "channels_first"),
        (x.permute(0, 2, 3, 1).contiguous(), row, column, "shared", "replicate", "channels_last"),
    ):
        torch.library.opcheck(torch.ops.constmem.separable_filter.default, args)
    u8 = torch.randint(0, 256, (2, 3, 8, 9), dtype=torch.uint8)
    torch.library.opcheck(
        torch.ops.constmem.separable_filter.default,
        (u8, row, column, "shared", "reflect", "channels_first"),
    )

    @torch.compile(fullgraph=True)
    def blur(x):
        return cm.gaussian_blur(x, 5) + cm.separable_filter(x, [0.25, 0.5, 0.25], [1.0])

    expected = cm.gaussian_blur(x, 5) + cm.separable_filter(x, [0.25, 0.5, 0.25], [1.0])
    torch.testing.assert_close(blur(x), expected)

    # Tap sets as Python lists, shared and per image, and as NumPy arrays: traced, no graph break.
    rows, columns = [[0.25, 0.5, 0.25], [0.1, 0.8, 0.1]], [[1.0], [0.5]]
    for row, column in (
        ([0.25, 0.5, 0.25], [1.0, 2.0, 1.0]),
        (rows, columns),
        (np.asarray(rows), np.asarray(columns)),
    ):
        compiled = torch.compile(
            lambda x, r=row, c=column: cm.separable_filter2d(x, r, c), fullgraph=True
        )
        torch.testing.assert_close(
            compiled(x), cm.separable_filter2d(x, row, column), rtol=0, atol=0
        )

    # Python numbers that change between calls (torch.compile makes the sigma symbolic): no graph
    # break, and the eager call's bits.
    varying = torch.compile(lambda x, k, s: cm.gaussian_blur(x, k, s), fullgraph=True)
    for k, sigma in ((5, 1.0), (7, 1.7)):
        torch.testing.assert_close(
            varying(x, k, sigma), cm.gaussian_blur(x, k, sigma), rtol=0, atol=0
        )


@pytest.mark.slow  # torch.compile of each sigma shape (about 25 s): scripts/test-slow.sh
def test_compile_with_sigma_tensors():
    """gaussian_blur with a sigma tensor of each shape traced by torch.compile(fullgraph=True):
    no graph break; on the CPU the eager call's bits, on a GPU within the rounding of the
    generated division (the docstring's exception)."""
    torch = pytest.importorskip("torch")
    import constmem.torch as cm

    torch._dynamo.reset()
    blur = torch.compile(lambda x, s: cm.gaussian_blur(x, 5, s), fullgraph=True)
    for device in ["cpu"] + (["cuda"] if torch.cuda.is_available() else []):
        x = torch.rand(2, 3, 16, 18, device=device)
        for sigma in ([1.0, 1.5], [[0.7, 1.2], [2.0, 0.4]], 0.9):
            s = torch.tensor(sigma, device=device)
            atol = 0 if device == "cpu" else 1e-6
            torch.testing.assert_close(blur(x, s), cm.gaussian_blur(x, 5, s), rtol=0, atol=atol)


def test_reduce_overhead_replays_blur_and_resample():
    """torch.compile(mode="reduce-overhead") records gaussian_blur and resample into CUDA graphs;
    its replays with new images, sigma tensors and waveforms give the eager calls' results."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    import constmem.torch as cm

    torch._dynamo.reset()

    @torch.compile(mode="reduce-overhead")
    def step(images, sigma, audio):
        return cm.gaussian_blur(images, 5, sigma), cm.resample(audio, 44100, 16000)

    for _ in range(5):
        images = torch.rand(4, 3, 32, 40, device="cuda")
        sigma = torch.rand(4, 2, device="cuda") + 0.5
        audio = torch.randn(2, 4410, device="cuda")
        got = [t.clone() for t in step(images, sigma, audio)]  # the next replay overwrites them
        want = (cm.gaussian_blur(images, 5, sigma), cm.resample(audio, 44100, 16000))
        for g, w in zip(got, want, strict=True):
            torch.testing.assert_close(g, w, rtol=0, atol=1e-6)


def test_jax_jit_vmap_grad():
    jax = pytest.importorskip("jax")
    import constmem.jax as cm
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(6)
    x = jnp.asarray(rng.standard_normal((3, 2, 6, 7)))
    row = jnp.asarray(rng.uniform(-1, 1, 3))
    column = jnp.asarray(rng.uniform(-1, 1, 4))
    expected = cm.separable_filter(x, row, column)
    np.testing.assert_allclose(
        jax.jit(lambda x, r, c: cm.separable_filter(x, r, c))(x, row, column), expected
    )
    batched = jax.vmap(lambda x: cm.separable_filter(x, row, column))(x)
    np.testing.assert_allclose(batched, expected)

    def loss(x, r, c):
        return jnp.sum(jnp.sin(cm.separable_filter(x, r, c, border="replicate")))

    grads = jax.grad(loss, argnums=(0, 1, 2))(x, row, column)
    eps = 1e-6
    for _ in range(3):
        steps = [jnp.asarray(rng.standard_normal(a.shape)) for a in (x, row, column)]
        plus = [a + eps * d for a, d in zip((x, row, column), steps, strict=True)]
        minus = [a - eps * d for a, d in zip((x, row, column), steps, strict=True)]
        numeric = (loss(*plus) - loss(*minus)) / (2 * eps)
        analytic = sum(jnp.sum(g * d) for g, d in zip(grads, steps, strict=True))
        np.testing.assert_allclose(analytic, numeric, rtol=1e-6)
    u8 = jnp.asarray(rng.integers(0, 256, (2, 6, 7)), jnp.uint8)
    out = jax.jit(lambda u: cm.gaussian_blur(u, 3))(u8)
    assert out.dtype == jnp.uint8


# ---- Filters of any length: past the fused kernel (127 taps an axis) and the constant bank ----

LONG_SHAPES = [((129, 129), (1, 2, 20, 30)), ((301, 5), (2, 1, 12, 9)), ((3, 4100), (1, 1, 6, 40))]


def test_limits_are_the_table_limit_in_every_framework(fw):
    assert fw.cm.MAX_SEPARABLE_TABLE == 2**20


@pytest.mark.parametrize("border", ["reflect", "zeros", "replicate"])
def test_long_filters_match_scipy(fw, border):
    """Longer than the fused kernel takes along either axis, and than the image (folded again)."""
    rng = np.random.default_rng(11)
    for (kw, kh), shape in LONG_SHAPES:
        x = rng.standard_normal(shape)
        row, column = taps(rng, kw) / np.sqrt(kw), taps(rng, kh) / np.sqrt(kh)
        expected = reference(x, row, column, border, "channels_first")
        results = []
        for device in fw.devices:
            for dtype, tol in (("float32", 2e-5), ("float64", 1e-12)):
                r, c = row.astype(dtype), column.astype(dtype)
                for forms in ((r, c), (fw.array(r, device), fw.array(c, device))):
                    y = fw.cm.separable_filter(fw.array(x, device, dtype), *forms, border=border)
                    scale = np.abs(row).sum() * np.abs(column).sum() * np.abs(x).max()
                    np.testing.assert_allclose(fw.numpy(y), expected, atol=tol * scale)
                    results.append((dtype, fw.numpy(y)))
        for dtype in ("float32", "float64"):  # every device and table form: the same bits
            same = [r for d, r in results if d == dtype]
            for r in same[1:]:
                np.testing.assert_array_equal(r, same[0])


def test_long_per_image_tables_past_the_constant_bank(fw):
    """Per-image pairs of 129 + 131 taps for 20 images: 5,200 entries, more than 4,096."""
    rng = np.random.default_rng(12)
    images, kw, kh = 20, 129, 131
    x = rng.standard_normal((images, 1, 5, 7))
    rows, columns = rng.uniform(-1, 1, (images, kw)), rng.uniform(-1, 1, (images, kh))
    expected = reference(x, rows, columns, "replicate", "channels_first", per_image=True)
    for device in fw.devices:
        y = fw.cm.separable_filter2d(fw.array(x, device), rows, columns, border="replicate")
        np.testing.assert_allclose(fw.numpy(y), expected, atol=1e-11)


def test_long_filters_in_tensorflow_match_scipy_and_the_other_frameworks():
    tf = pytest.importorskip("tensorflow")
    import constmem.tensorflow as cm_tf

    assert cm_tf.MAX_SEPARABLE_TABLE == 2**20
    rng = np.random.default_rng(13)
    devices = ["/CPU:0"] + [f"/GPU:{i}" for i in range(len(tf.config.list_physical_devices("GPU")))]
    others = [Framework(name) for name in FRAMEWORKS]
    for (kw, kh), shape in LONG_SHAPES:
        x = rng.standard_normal(shape).astype(np.float32)
        row = (taps(rng, kw) / np.sqrt(kw)).astype(np.float32)
        column = (taps(rng, kh) / np.sqrt(kh)).astype(np.float32)
        expected = reference(x, row, column, "reflect", "channels_first")
        on_cpu = None
        for device in devices:
            with tf.device(device):
                for forms in ((row, column), (tf.constant(row), tf.constant(column))):
                    y = cm_tf.separable_filter(x, *forms).numpy()
                    np.testing.assert_allclose(y, expected, atol=1e-5)
                    on_cpu = y if on_cpu is None else on_cpu
                    np.testing.assert_array_equal(y, on_cpu)
        for other in others:
            y = other.cm.separable_filter(other.array(x, other.devices[0]), row, column)
            np.testing.assert_array_equal(other.numpy(y), on_cpu)
        blurred = cm_tf.gaussian_blur(np.ones((1, 70, 80), np.float32), 129, 30.0).numpy()
        np.testing.assert_allclose(blurred, 1.0, atol=1e-5)  # taps that sum to 1


def test_gaussian_blur_any_odd_kernel_size_as_torchvision():
    torch = pytest.importorskip("torch")
    import constmem.torch as cm

    rng = np.random.default_rng(14)
    # float64: torchvision's 2-D convolution sums k * k terms, too many for a float32 tolerance.
    x = torch.as_tensor(rng.uniform(0, 1, (1, 1, 70, 80)))
    for kernel_size, sigma in (((129, 129), None), ((129, 131), (20.0, 3.5)), ((9, 139), 7.0)):
        ks = list(kernel_size)
        sig = [k * 0.15 + 0.35 for k in ks] if sigma is None else sigma
        sig = [sig, sig] if isinstance(sig, float) else list(sig)
        expected = torchvision_blur(x, ks, sig)
        np.testing.assert_allclose(
            cm.gaussian_blur(x, ks, sigma).numpy(), expected.numpy(), atol=1e-12
        )
    u8 = torch.as_tensor(rng.integers(0, 256, (2, 3, 70, 80)).astype(np.uint8))
    expected = torchvision_blur(u8, [129, 129], [9.0, 9.0])
    out = cm.gaussian_blur(u8, 129, 9.0)
    assert out.dtype == torch.uint8
    assert (out.int() - expected.int()).abs().max() <= 1
    # A kernel larger than the image with padding k // 2 below its size: torchvision blurs it.
    small = x[..., :8, :9]
    np.testing.assert_allclose(
        cm.gaussian_blur(small, 15, 2.0).numpy(),
        torchvision_blur(small, [15, 15], [2.0, 2.0]).numpy(),
        atol=1e-12,
    )
    # Padding k // 2 not below the size: torchvision's reflect padding refuses, and so does this.
    for kernel_size in (17, (19, 3), (3, 17)):
        ks = [kernel_size] * 2 if isinstance(kernel_size, int) else list(kernel_size)
        with pytest.raises(RuntimeError):
            torchvision_blur(small, ks, [2.0, 2.0])
        with pytest.raises(ValueError, match="reflect padding"):
            cm.gaussian_blur(small, kernel_size, 2.0)
    # Other borders take any size; so does an empty image, as in torchvision.
    assert cm.gaussian_blur(small, 129, 2.0, border="zeros").shape == small.shape
    assert cm.gaussian_blur(x[..., :0, :], 129).shape == (1, 1, 0, 80)
    for bad in (0, -3, 128, (129, 4)):
        with pytest.raises(ValueError, match="odd and positive"):
            cm.gaussian_blur(x, bad)
    for bad in (0.0, -1.0, (2.0, 0.0)):
        with pytest.raises(ValueError, match="sigma should have positive values"):
            cm.gaussian_blur(x, 129, bad)


def test_gaussian_blur_long_kernels_in_jax(fw):
    if fw.name != "jax":
        pytest.skip("JAX's own jit of the long kernel")
    import jax
    from constmem.ops.separable_filter import gaussian_taps

    rng = np.random.default_rng(15)
    x = rng.uniform(0, 1, (1, 2, 70, 66))
    t = np.asarray(gaussian_taps(129, 11.0))  # torchvision's formula, in float64
    expected = reference(x, t, t, "reflect", "channels_first")
    for device in fw.devices:
        y = jax.jit(lambda v: fw.cm.gaussian_blur(v, 129, 11.0))(fw.array(x, device))
        np.testing.assert_allclose(fw.numpy(y), expected, atol=1e-12)
    with pytest.raises(ValueError, match="reflect padding"):
        fw.cm.gaussian_blur(fw.array(x[..., :60], fw.devices[0]), 129)


# ---- float16 and bfloat16, channels_last, sigma tensors, torchvision's argument names ----

# Half the spacing of each dtype's values in [1/2, 1]: the most a rounding moves a value there.
HALF_STEP = {"float16": 2.0**-12, "bfloat16": 2.0**-9}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_float16_and_bfloat16_images_are_filtered_in_float32(fw, dtype):
    """The float32 filter, one rounding to the images' dtype, and gradients back in that dtype."""
    from constmem.ops.separable_filter import gaussian_taps

    rng = np.random.default_rng(21)
    x = rng.uniform(0.5, 1.0, (2, 3, 9, 11))
    w = rng.uniform(0.5, 1.0, x.shape)
    row, column = np.asarray(gaussian_taps(5, 1.2)), np.asarray(gaussian_taps(3, 0.8))
    for device in fw.devices:
        low = fw.cast(fw.array(x, device, "float32"), dtype)
        exact = reference(fw.float64(low), row, column, "reflect", "channels_first")
        widened = fw.cast(low, "float32")
        for y, y32 in (
            (
                fw.cm.gaussian_blur(low, [5, 3], [1.2, 0.8]),
                fw.cm.gaussian_blur(widened, [5, 3], [1.2, 0.8]),
            ),
            (
                fw.cm.separable_filter2d(low, row, column),
                fw.cm.separable_filter2d(widened, row, column),
            ),
        ):
            assert str(y.dtype).endswith(dtype)
            np.testing.assert_array_equal(fw.float64(y), fw.float64(fw.cast(y32, dtype)))
            np.testing.assert_allclose(fw.float64(y), exact, rtol=0, atol=HALF_STEP[dtype] + 1e-6)
        # With zero borders and symmetric taps the filter is its own adjoint: the gradient of
        # sum(w * blur(x)) is blur(w), here of w rounded to the dtype as the cast's gradient is.
        w_low = fw.cast(fw.array(w, device, "float32"), dtype)
        expected = reference(fw.float64(w_low), row, column, "zeros", "channels_first")
        if fw.name == "torch":
            data = low.clone().requires_grad_(True)
            y = fw.cm.gaussian_blur(data, [5, 3], [1.2, 0.8], border="zeros")
            (y.float() * w_low.float()).sum().backward()
            grad = data.grad
        else:
            import jax

            def loss(v, w=w_low):
                y = fw.cm.gaussian_blur(v, [5, 3], [1.2, 0.8], border="zeros")
                return (y.astype("float32") * w.astype("float32")).sum()

            grad = jax.grad(loss)(low)
        assert str(grad.dtype).endswith(dtype)
        np.testing.assert_allclose(fw.float64(grad), expected, rtol=0, atol=HALF_STEP[dtype] + 1e-6)


def test_channels_last_images_stay_channels_last():
    """A channels_last NCHW tensor is filtered as NHWC in place: the same values, the format kept,
    gradients through it."""
    torch = pytest.importorskip("torch")
    import constmem.torch as cm

    rng = np.random.default_rng(22)
    x = rng.standard_normal((2, 3, 9, 11))
    row, column = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 4)
    expected = reference(x, row, column, "replicate", "channels_first")
    sigmas = torch.tensor([[0.7, 1.3], [2.0, 0.9]])
    calls = (
        lambda t: cm.separable_filter2d(t, row, column, border="replicate"),
        lambda t: cm.gaussian_blur(t, 5, 1.1),
        lambda t: cm.gaussian_blur(t, [3, 5], sigmas),
        lambda t: cm.gaussian_blur(t.to(torch.bfloat16), 5),
    )
    for device in ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]:
        nchw = torch.tensor(x, device=device)
        channels_last = nchw.contiguous(memory_format=torch.channels_last)
        assert not channels_last.is_contiguous()
        for call in calls:
            y = call(channels_last)
            assert y.is_contiguous(memory_format=torch.channels_last)
            torch.testing.assert_close(y, call(nchw), rtol=0, atol=0)
        np.testing.assert_allclose(calls[0](channels_last).cpu().numpy(), expected, atol=1e-12)
        grads = []
        for t in (nchw, channels_last):
            data = t.clone().requires_grad_(True)
            cm.gaussian_blur(data, 5, 1.1).pow(2).sum().backward()
            grads.append(data.grad)
        torch.testing.assert_close(grads[1], grads[0], rtol=0, atol=0)


@pytest.mark.parametrize("name", ["torch", "jax", "tensorflow"])
def test_float32_reciprocals_of_gaussian_taps_are_correctly_rounded_in_every_framework(name):
    """The reciprocal the sigma-tensor taps take (XLA divides float32 on a GPU to within an ulp):
    NumPy's correctly rounded 1 / t, bit for bit, over normal values with normal reciprocals,
    powers of two and values next to them."""
    module = pytest.importorskip(name)
    from constmem.ops.separable_filter import _reciprocal

    arrays = importlib.import_module(f"constmem.{name}")._OWN._arrays("separable_filter")

    rng = np.random.default_rng(47)
    powers = 2.0 ** np.arange(-125, 126)
    values = np.concatenate(
        [
            rng.uniform(0.01, 100.0, 100_000),
            np.exp(rng.uniform(-87.0, 87.0, 100_000)),
            powers,
            np.nextafter(powers.astype(np.float32), np.float32(np.inf)),
            np.nextafter(powers.astype(np.float32), np.float32(0)),
        ]
    ).astype(np.float32)
    values = values[(values > 1.2e-38) & (values < 8.5e37)]  # the reciprocal is normal too
    if name == "torch":
        t = module.from_numpy(values)
    elif name == "jax":
        t = module.numpy.asarray(values)
    else:
        t = module.constant(values)
    got = np.asarray(_reciprocal(arrays, t, "float32"))
    expected = np.float32(1) / values
    mismatched = values[got.view(np.int32) != expected.view(np.int32)]
    assert mismatched.size == 0, mismatched[:5]


def sigma_gradient(fw, images, sigma, dtype):
    """d sum(gaussian_blur(images, 5, sigma) * images) / d sigma, sigma a tensor of `dtype`."""
    weights = images
    x = fw.array(images, fw.devices[0], dtype)
    w = fw.array(weights, fw.devices[0], dtype)
    if fw.name == "torch":
        s = fw.array(sigma, fw.devices[0], dtype).requires_grad_()
        (fw.cm.gaussian_blur(x, 5, s) * w).sum().backward()
        return fw.numpy(s.grad).astype(np.float64)
    import jax

    grad = jax.grad(lambda s: (fw.cm.gaussian_blur(x, 5, s) * w).sum())
    return np.asarray(grad(fw.array(sigma, fw.devices[0], dtype)), np.float64)


@pytest.mark.parametrize("sigma", [1.5, [1.5, 0.8], [[1.5, 0.8]]])
def test_sigma_gradient_in_float32_and_float64_is_the_finite_difference(fw, sigma):
    """The gradient to a sigma tensor, of every shape and in both dtypes, against a central
    difference of the float64 blur: the float32 taps' integer reciprocal passes the division's
    gradient."""
    images = np.random.default_rng(40).uniform(0, 1, (1, 1, 16, 16))
    weights = images  # the blur's correlation with the image, which a wider blur lowers
    base = np.asarray(sigma, np.float64)
    x = fw.array(images, fw.devices[0])

    def blurred(s):  # the weighted sum for sigma values s of base's shape, as a list (x, y)
        pair = list(np.broadcast_to(s, (2,)) if s.ndim < 2 else s[0])
        return (fw.numpy(fw.cm.gaussian_blur(x, 5, pair)) * weights).sum()

    expected = np.zeros_like(base)
    for index in np.ndindex(base.shape):
        step = np.zeros_like(base)
        step[index] = 1e-6
        expected[index] = (blurred(base + step) - blurred(base - step)) / 2e-6
    assert np.abs(expected).min() > 1.0  # a gradient of consequence, not a vanishing one
    for dtype, tolerance in (("float64", 1e-6), ("float32", 2e-3)):
        got = sigma_gradient(fw, images, base, dtype)
        np.testing.assert_allclose(got, expected, rtol=tolerance, err_msg=dtype)


def test_sigma_tensors_of_every_shape_and_their_checks(fw):
    """Shapes () and (2,) blur every image alike; a host tensor's values are checked, a GPU
    tensor's are not (NaN blurs to NaN); a meta tensor blurs meta images."""
    rng = np.random.default_rng(24)
    x = rng.uniform(0, 1, (2, 3, 10, 12))
    host = "cpu" if fw.name == "torch" else fw.devices[0]
    for device in fw.devices:
        images = fw.array(x, device, "float32")
        for sigma, pair in ((1.2, [1.2, 1.2]), ([1.5, 0.8], [1.5, 0.8])):
            expected = fw.numpy(fw.cm.gaussian_blur(images, 5, pair))
            for where in {host, device}:
                out = fw.cm.gaussian_blur(images, 5, fw.array(sigma, where))
                np.testing.assert_allclose(fw.numpy(out), expected, rtol=0, atol=1e-6)
        for bad in (-1.0, 0.0, np.nan, np.inf):
            with pytest.raises(ValueError, match="sigma must hold positive finite values"):
                fw.cm.gaussian_blur(images, 5, fw.array([[1.0, 1.0], [1.0, bad]], host))
        with pytest.raises(
            ValueError, match=r"sigma must be a tensor of shape .* got shape \(3,\)"
        ):
            fw.cm.gaussian_blur(images, 5, fw.array([1.0, 1.0, 1.0], host))
        if device != host:  # not read: its values would need a wait for the device
            out = fw.numpy(
                fw.cm.gaussian_blur(images, 5, fw.array([[1.0, 1.0], [np.nan, 1]], device))
            )
            assert np.isfinite(out[0]).all() and np.isnan(out[1]).all()
    if fw.name == "torch":
        import torch

        sigma = torch.tensor([[1.0, 2.0], [0.5, 0.7]], device="meta")
        out = fw.cm.gaussian_blur(torch.empty(2, 3, 10, 12, device="meta"), 5, sigma)
        assert out.device.type == "meta" and out.shape == (2, 3, 10, 12)
        with pytest.raises(ValueError, match="sigma is on the meta device"):
            fw.cm.gaussian_blur(torch.rand(2, 3, 10, 12), 5, sigma)


TORCHVISION_IMAGES = "inpt"


def test_a_call_sites_checked_taps_still_check_each_call(fw):
    """After a plain call (int size, float sigma) whose taps are then kept, the same size and
    sigma still get each call's checks, and other values theirs."""
    images = fw.array(
        np.random.default_rng(26).uniform(0, 1, (2, 3, 8, 9)), fw.devices[0], "float32"
    )
    expected = fw.numpy(fw.cm.gaussian_blur(images, 5, 1.0))
    np.testing.assert_array_equal(fw.numpy(fw.cm.gaussian_blur(images, 5, 1.0)), expected)
    # The same blur in the forms a transform passes it: the same taps, kept for them too.
    for size, sigma in (([5, 5], [1.0, 1.0]), ((5, 5), [1.0]), (5, (1, 1)), ([5, 5], [1.0, 1.0])):
        out = fw.cm.gaussian_blur(images, size, sigma)
        np.testing.assert_array_equal(fw.numpy(out), expected)
    uneven = fw.numpy(fw.cm.gaussian_blur(images, [5, 3], [1.0, 2.0]))
    np.testing.assert_array_equal(fw.numpy(fw.cm.gaussian_blur(images, [5, 3], [1.0, 2.0])), uneven)
    assert not np.array_equal(uneven, fw.numpy(fw.cm.gaussian_blur(images, [3, 5], [2.0, 1.0])))
    tiny = fw.array(np.zeros((2, 3, 2, 9)), fw.devices[0], "float32")
    with pytest.raises(ValueError, match="reflect padding of 2"):
        fw.cm.gaussian_blur(tiny, 5, 1.0)
    with pytest.raises(ValueError, match="reflect padding of 2"):
        fw.cm.gaussian_blur(tiny, [3, 5], [1.0, 1.0])
    with pytest.raises(ValueError, match="must be float32, float64, uint8"):
        fw.cm.gaussian_blur(fw.array(np.zeros((3, 8, 9)), fw.devices[0], "int16"), 5, 1.0)
    with pytest.raises(TypeError, match="kernel_size must be an odd positive integer"):
        fw.cm.gaussian_blur(images, True, 1.0)
    with pytest.raises(ValueError, match="sigma should have positive values"):
        fw.cm.gaussian_blur(images, 5, -1.0)


def test_torchvisions_argument_names(fw):
    images = fw.array(np.random.default_rng(25).uniform(0, 1, (3, 8, 9)), fw.devices[0], "float32")
    expected = fw.numpy(fw.cm.gaussian_blur(images, 5, 1.0))
    for name in ("images", TORCHVISION_IMAGES, "img"):
        out = fw.cm.gaussian_blur(**{name: images}, kernel_size=5, sigma=1.0)
        np.testing.assert_array_equal(fw.numpy(out), expected)
    with pytest.raises(TypeError, match=f"'images' and '{TORCHVISION_IMAGES}', two names of one"):
        fw.cm.gaussian_blur(images, 5, **{TORCHVISION_IMAGES: images})
    with pytest.raises(TypeError, match="missing required argument: 'images'"):
        fw.cm.gaussian_blur(kernel_size=5)
    integers = fw.array(np.zeros((3, 8, 9)), fw.devices[0], "int16")
    with pytest.raises(
        ValueError, match=f"^{TORCHVISION_IMAGES} must be float32, float64, uint8, "
    ):
        fw.cm.gaussian_blur(**{TORCHVISION_IMAGES: integers}, kernel_size=5)


def test_pil_images_in_every_framework(fw):
    """A PIL image is blurred as an [H, W, C] image of its pixels and comes back as a PIL image
    of its mode and size, the same in every framework."""
    image_module = pytest.importorskip("PIL.Image")
    pixels = np.random.default_rng(42).integers(0, 256, (12, 10, 3), dtype=np.uint8)
    for mode in ("RGB", "L"):
        image = image_module.fromarray(pixels, "RGB").convert(mode)
        out = fw.cm.gaussian_blur(image, [3, 5], [1.0, 1.5])
        assert isinstance(out, image_module.Image) and (out.mode, out.size) == (mode, image.size)
        array = np.array(image)
        planes = array if array.ndim == 3 else array[..., None]
        expected = fw.cm.gaussian_blur(
            fw.array(planes, fw.devices[0]), [3, 5], [1.0, 1.5], layout="channels_last"
        )
        np.testing.assert_array_equal(np.asarray(out), fw.numpy(expected).reshape(array.shape))
