# SPDX-License-Identifier: Apache-2.0
"""SeparableFilter in Python: signature, gradient, Keras layer and functions, for every framework.

The op's C++ description (separable_filter_op.h) gives its names, table and attributes; this file
what the Python packages add to them (constmem.ops): the raw op `separable_filter(images, taps,
row_taps, ...)` with one table, `separable_filter2d(images, row_taps, column_taps, ...)` with the
two tap sets apart, and `gaussian_blur(images, kernel_size, sigma=None, ...)`, torchvision's.
"""

from __future__ import annotations

import math
import numbers
import sys

import numpy as np

# The name of the module constant that holds the most entries the table takes.
LIMIT = "MAX_SEPARABLE_TABLE"
# The most taps along either axis (kSeparableMaxTaps): the table limit of every op, 2^20.
MAX_AXIS_TAPS = 1 << 20
SIGNATURE = ("images", "taps", "row_taps")
DEFAULTS = {"column_taps": 0, "border": "reflect", "layout": "channels_first"}
DOC = """Filters every image with a separable 2-D filter, the output the size of the input.

Each image is correlated along its width with the `row_taps` first taps of `taps` (kw), then along
its height with the next kh (`column_taps`): `tmp[y, x] = sum_j row[j] * in[y, x + j - cw]`,
`out[y, x] = sum_i col[i] * tmp[y + i - ch, x]`, `c = (k - 1) // 2` on each axis, one fused
multiply-add per tap in tap order from +0, on the CPU as on the GPU, so that the two agree bit for
bit. The GPU kernel reads the taps from `__constant__` memory (or a by-value kernel parameter)
with warp-uniform indices, one fused pass per tile; filters of more than 127 taps along either
axis run in two passes through an intermediate in global memory, their taps read from there too,
with the same results.

Args:
  images: channels_first `[..., C, H, W]` (every axis before C an image; rank 2 is one plane) or
    channels_last `[..., H, W, C]` (every axis before H an image): float32, float64, or uint8
    (computed in float32, then rounded half to even and clamped to [0, 255], as torchvision
    rounds uint8 images).
  taps: the kw row taps then the kh column taps: shared by every image (`kw + kh` entries) or one
    pair per image (`B * (kw + kh)` entries, B > 1 the number of images, image b's pair at
    `b * (kw + kh)`; needs `column_taps`), at most 2^20 entries. float32 for float32 and uint8
    images, float64 for float64 images; a tensor, or a Python or NumPy sequence (fixed per call
    site).
  row_taps: kw, 1 to 2^20.
  column_taps: kh, 1 to 2^20; 0 (default): the rest of a shared table, `len(taps) - kw`.
  border: "reflect" (reflect-101: `... 2 1 | 0 1 2 ...`, torch's "reflect", OpenCV's
    BORDER_REFLECT_101, scipy's "mirror"), "zeros" or "replicate" (scipy's "nearest").
  layout: "channels_first" or "channels_last".

Gradients flow to float images (the same filter with each tap set reversed, the border's adjoint
folding gradients back onto the pixels they were read from) and to a tensor `taps`; none through
uint8 images. In TensorFlow the gradients need static image shapes unless the border is "zeros"
and no taps gradient is asked.
"""


def _check_taps(name, value, low):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer; got {value!r}")
    if not low <= value <= MAX_AXIS_TAPS:
        raise ValueError(f"{name} must be {low} to {MAX_AXIS_TAPS}; got {value}")


def check(attrs):
    """row_taps in 1 .. 2^20, column_taps in 0 .. 2^20 (0: the rest of a shared table)."""
    _check_taps("row_taps", attrs["row_taps"], 1)
    _check_taps("column_taps", attrs["column_taps"], 0)


def _geometry(shape, layout):
    """(images, height axis, width axis) of an image shape; images None where unknown."""
    last = layout == "channels_last"
    rank = len(shape)
    if rank < (3 if last else 2):
        expected = "3 or more ([..., H, W, C])" if last else "2 or more ([..., H, W])"
        raise ValueError(f"images must have rank {expected}; got rank {rank}")
    images = 1
    for d in shape[: max(rank - 3, 0)]:
        if not isinstance(d, int):
            return None, (-3, -2) if last else (-2, -1)
        images *= d
    return images, (-3, -2) if last else (-2, -1)


def _table_rule(images, size, attrs):
    """(kw, kh, per_image) of a table of `size` entries for `images` images, checked."""
    kw, kh = attrs["row_taps"], attrs["column_taps"]
    if kh == 0:
        if size - kw < 1:
            raise ValueError(
                f"taps must hold row_taps + at least one column tap; got {size} entries for "
                f"row_taps = {kw}"
            )
        return kw, size - kw, False
    pair = kw + kh
    if size == pair:
        return kw, kh, False
    if images is not None and images > 1 and size == images * pair:
        return kw, kh, True
    if images is None:
        return kw, kh, True
    raise ValueError(
        f"taps must have row_taps + column_taps = {pair} entries (shared) or {images} * {pair} "
        f"(one pair per image); got {size}"
    )


def output_shape(shape, taps, attrs, maximum=max):
    """The images' shape; refuses a rank or table size the op refuses, where they are known."""
    images, _ = _geometry(shape, attrs["layout"])
    if isinstance(taps, int):
        _, kh, _ = _table_rule(images, taps, attrs)
        if kh > MAX_AXIS_TAPS:
            raise ValueError(f"SeparableFilter takes 1 to {MAX_AXIS_TAPS} taps along each axis")
    return tuple(shape)


# The Keras layer: `taps` trainable entries (kw row taps then the column taps), a unit impulse at
# each axis's centre at first.
def _impulse(entries, attrs):
    kw = attrs["row_taps"]
    kh = attrs["column_taps"] or entries - kw
    return [
        *(1.0 if j == (kw - 1) // 2 else 0.0 for j in range(kw)),
        *(1.0 if i == (kh - 1) // 2 else 0.0 for i in range(kh)),
    ]


LAYER = {
    "name": "SeparableFilter",
    "size": "taps",
    "size_to_entries": lambda taps: taps,
    "initial": _impulse,
    "weight": "taps",
    "variable": "kernel",
}


def _fold(n, border):
    """fold(i) for virtual indices -n_pad .. as a function, as the kernel folds them."""

    def fold(i):
        if 0 <= i < n:
            return i
        if border == "zeros":
            return -1
        if border == "replicate":
            return 0 if i < 0 else n - 1
        if n == 1:
            return 0
        period = 2 * (n - 1)
        m = i % period
        return m if m < n else period - m

    return fold


def _source_indices(n, k, border):
    """For the n + k - 1 padded positions p, the pixel p - (k - 1) // 2 is read from (n: none)."""
    fold = _fold(n, border)
    c = (k - 1) // 2
    return np.asarray([(s if s >= 0 else n) for s in (fold(p - c) for p in range(n + k - 1))])


def _fold_layers(n, k, border):
    """The border's adjoint as gathers: layers of indices into the padded positions.

    Into n + k - 1 positions plus one zero at n + k - 1: their sum over layers is, for each pixel,
    the sum over the positions that read it.
    """
    sources = _source_indices(n, k, border)
    preimages = [[] for _ in range(n)]
    for p, s in enumerate(sources):
        if s < n:
            preimages[s].append(p)
    depth = max((len(p) for p in preimages), default=1)
    zero = n + k - 1
    return [np.asarray([p[m] if m < len(p) else zero for p in preimages]) for m in range(depth)]


def _static(F, t, axis):
    size = F.size(t, axis)
    if not isinstance(size, int):
        raise ValueError("SeparableFilter's gradient needs images of static height and width here")
    return size


def _adjoint(F, g, table_index, kw, kh, axis, n, k, attrs, table):
    """The adjoint of one axis's pass (with the border) applied to g along `axis`.

    A zero-border filter with the taps reversed over g padded to the n + k - 1 positions the
    pass read, then each position's sum folded back onto the pixel it was read from.
    """
    c = (k - 1) // 2
    padded = F.pad_axis(g, axis, k - 1 - c, c)
    full = F.op(
        padded,
        F.take(F.concat([table, F.zeros(1, table) + 1]), table_index, 0),
        row_taps=kw,
        column_taps=kh,
        border="zeros",
    )
    full = F.pad_axis(full, axis, 0, 1)  # a zero at n + k - 1 for pixels read fewer times
    layers = _fold_layers(n, k, attrs["border"])
    total = F.take(full, layers[0], axis)
    for layer in layers[1:]:
        total = total + F.take(full, layer, axis)
    return total


def backward(F, grad, images, taps, attrs, need_images, need_taps):
    """D images: the passes' adjoints in reverse order; d taps: the passes' correlations."""
    shape = tuple(images.shape)
    count, (h_axis, w_axis) = _geometry(shape, attrs["layout"])
    size = F.length(taps)
    kw, kh, per_image = _table_rule(count, size, attrs)
    pair = kw + kh
    blocks = size // pair if per_image else 1
    one = size  # the index of the 1 appended to the table
    starts = [b * pair for b in range(blocks)]
    h = _static(F, images, h_axis)
    w = _static(F, images, w_axis)
    # The column pass's adjoint: row taps [1], the column taps reversed.
    column_reversed = np.concatenate([[one, *range(s + pair - 1, s + kw - 1, -1)] for s in starts])
    g_rows = _adjoint(F, grad, column_reversed, 1, kh, h_axis, h, kh, attrs, taps)
    grad_images = grad_taps = None
    if need_images:
        row_reversed = np.concatenate([[*range(s + kw - 1, s - 1, -1), one] for s in starts])
        grad_images = _adjoint(F, g_rows, row_reversed, kw, 1, w_axis, w, kw, attrs, taps)
    if need_taps:
        # The row pass alone (column taps [1]), as the column pass reads it, padded by the border.
        row_only = np.concatenate([[*range(s, s + kw), one] for s in starts])
        rows = F.op(
            images,
            F.take(F.concat([taps, F.zeros(1, taps) + 1]), row_only, 0),
            row_taps=kw,
            column_taps=1,
        )
        rows = F.take(
            F.pad_axis(rows, h_axis, 0, 1), _source_indices(h, kh, attrs["border"]), h_axis
        )
        samples = F.take(
            F.pad_axis(images, w_axis, 0, 1), _source_indices(w, kw, attrs["border"]), w_axis
        )

        def sums(product):  # per image, or over everything for a shared table
            return F.row_sums(F.reshape(product, (blocks, -1)))

        row_sums = [sums(g_rows * F.take(samples, np.arange(j, j + w), w_axis)) for j in range(kw)]
        column_sums = [sums(grad * F.take(rows, np.arange(i, i + h), h_axis)) for i in range(kh)]
        # Tap-major sums, reordered image-major: image b's kw row taps, then its kh column taps.
        stacked = F.concat(row_sums + column_sums)
        order = np.asarray([t * blocks + b for b in range(blocks) for t in range(pair)])
        grad_taps = F.take(stacked, order, 0)
    return grad_images, grad_taps


# ---- Functions built on the op ----


def _framework(value):
    """'torch', 'jax' or 'tensorflow' for a tensor of that framework, else None."""
    if value is None or isinstance(value, (numbers.Number, list, tuple, np.ndarray)):
        return None
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return "torch"
    jax = sys.modules.get("jax")
    if jax is not None and isinstance(value, jax.Array):
        return "jax"
    tf = sys.modules.get("tensorflow")
    if tf is not None and tf.is_tensor(value):
        return "tensorflow"
    return None


class _Xp:
    """The few array functions the functions below need, in the images' framework."""

    def __init__(self, name):
        self.name = name
        if name == "torch":
            import torch

            self.m = torch
        elif name == "jax":
            import jax.numpy as jnp

            self.m = jnp
        else:
            import tensorflow as tf

            self.m = tf

    def asarray(self, value, dtype, like):
        if self.name == "torch":
            return self.m.as_tensor(value, dtype=getattr(self.m, dtype), device=like.device)
        if self.name == "jax":
            return self.m.asarray(value, dtype)
        return self.m.cast(self.m.convert_to_tensor(value), dtype)

    def linspace(self, start, stop, num, dtype, like):
        """`num` points from start to stop, made on like's device (no copy from the host)."""
        if self.name == "torch":
            return self.m.linspace(
                start, stop, num, dtype=getattr(self.m, dtype), device=like.device
            )
        if self.name == "jax":
            return self.m.linspace(start, stop, num, dtype=dtype)
        return self.m.cast(self.m.linspace(start, stop, num), dtype)

    def reshape(self, t, shape):
        return self.m.reshape(t, shape)

    def concat(self, parts, axis):
        if self.name == "torch":
            return self.m.cat(parts, dim=axis)
        if self.name == "jax":
            return self.m.concatenate(parts, axis=axis)
        return self.m.concat(parts, axis)

    def exp(self, t):
        return self.m.exp(t) if self.name != "tensorflow" else self.m.math.exp(t)

    def sum_last(self, t):
        if self.name == "tensorflow":
            return self.m.reduce_sum(t, axis=-1, keepdims=True)
        if self.name == "torch":
            return t.sum(-1, keepdim=True)
        return t.sum(-1, keepdims=True)


def _dtype_name(images):
    dtype = getattr(images, "dtype", None)
    name = getattr(dtype, "name", None) or str(dtype).removeprefix("torch.")
    return name


def _compute_dtype(images):
    return "float64" if _dtype_name(images) == "float64" else "float32"


def _pair_table(row, column, images):
    """One table from row and column taps, each [k] (shared) or [B, k] (per image).

    Returns (table, kw, kh): NumPy when neither is a tensor, else a tensor of the images'
    framework.
    """
    framework = _framework(row) or _framework(column)
    if framework is None:
        row = np.asarray(row, np.float64)
        column = np.asarray(column, np.float64)
        if row.ndim != column.ndim or row.ndim not in (1, 2):
            raise ValueError(
                "row_taps and column_taps must both be [k] (shared) or [B, k] (per image); "
                f"got shapes {row.shape} and {column.shape}"
            )
        if row.ndim == 1:
            return np.concatenate([row, column]), row.shape[0], column.shape[0]
        return np.concatenate([row, column], 1).reshape(-1), row.shape[1], column.shape[1]
    xp = _Xp(framework)
    dtype = _compute_dtype(images)
    row = xp.asarray(row, dtype, images)
    column = xp.asarray(column, dtype, images)
    if len(row.shape) != len(column.shape) or len(row.shape) not in (1, 2):
        raise ValueError(
            "row_taps and column_taps must both be [k] (shared) or [B, k] (per image); "
            f"got shapes {tuple(row.shape)} and {tuple(column.shape)}"
        )
    axis = len(row.shape) - 1
    table = xp.reshape(xp.concat([row, column], axis), (-1,))
    return table, int(row.shape[-1]), int(column.shape[-1])


def _make_separable_filter2d(ops):
    def separable_filter2d(
        images, row_taps, column_taps, border="reflect", layout="channels_first", **options
    ):
        """A separable filter from its two tap sets: `row_taps` (along W) then `column_taps`.

        Each is a vector `[k]` shared by every image, or `[B, k]` one row per image (B > 1);
        a tensor, or a Python or NumPy sequence (fixed per call site). The rest is as for
        `separable_filter` (border, layout; TensorFlow's `source` and `name` in `options`).
        """
        table, kw, kh = _pair_table(row_taps, column_taps, images)
        return ops.separable_filter(
            images, table, kw, column_taps=kh, border=border, layout=layout, **options
        )

    return separable_filter2d


def gaussian_taps(kernel_size, sigma):
    """Torchvision's 1-D Gaussian taps (its _get_gaussian_kernel1d), in float64.

    A list of Python floats: plain Python, which torch.compile and jax.jit trace as constants.
    """
    lim = (kernel_size - 1) / (2.0 * math.sqrt(2.0))
    step = 2.0 * lim / (kernel_size - 1) if kernel_size > 1 else 0.0
    exponents = [-(((-lim + i * step) / sigma) ** 2) for i in range(kernel_size)]
    top = max(exponents)
    values = [math.exp(e - top) for e in exponents]
    total = math.fsum(values)
    return [v / total for v in values]


def _is_sym_int(value):
    """Whether `value` is torch.compile's symbolic int (where torch is loaded)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.SymInt)


def _torch_compiling():
    """Whether torch.compile is tracing the call (where torch is loaded)."""
    torch = sys.modules.get("torch")
    return torch is not None and torch.compiler.is_compiling()


def _traced_gaussian_taps(torch, kernel_size, sigma, device):
    """gaussian_taps as a float64 tensor on `device`, in a graph that torch.compile traces.

    Sigma may be symbolic there.
    """
    lim = (kernel_size - 1) / (2.0 * math.sqrt(2.0))
    step = 2.0 * lim / (kernel_size - 1) if kernel_size > 1 else 0.0
    x = torch.arange(kernel_size, dtype=torch.float64, device=device) * step - lim
    exponents = -((x / sigma) ** 2)
    values = torch.exp(exponents - exponents.max())
    return values / values.sum()


def _pair(value, name):
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return [value, value]
    values = list(value)
    if len(values) == 1:
        return values * 2
    if len(values) != 2:
        raise ValueError(f"{name} must be one value or two (x, y); got {len(values)}")
    return values


def _make_gaussian_blur(ops):
    def gaussian_blur(
        images, kernel_size, sigma=None, border="reflect", layout="channels_first", **options
    ):
        """torchvision.transforms.v2.functional.gaussian_blur, on constmem's separable filter.

        The same taps (torchvision's `_get_gaussian_kernel1d`), border ("reflect") and uint8
        rounding (half to even), so that switching is one import: the results agree within
        float32 rounding (torchvision convolves with the 2-D outer product of the taps; this
        filters rows then columns).

        Args:
          images: `[..., C, H, W]` (or `[..., H, W, C]` with layout="channels_last"): float32,
            float64 or uint8.
          kernel_size: odd k, or (kx, ky) (x along the width): any odd positive sizes, as
            torchvision. With border="reflect" each half, k // 2, must be less than the image's
            size along its axis, as torchvision's reflect padding requires (ValueError).
          sigma: None (each axis's `0.15 * k + 0.35`, torchvision's default),
            one value, (sigma_x, sigma_y), or a tensor of shape (B, 2) with one (sigma_x,
            sigma_y) per image (kornia takes (B, 2) too, but as (sigma_y, sigma_x)).
          border: "reflect" (torchvision's), "zeros" or "replicate".
          layout: "channels_first" or "channels_last".
          **options: TensorFlow's `source` and `name`.

        """
        try:
            sizes = (
                []
                if isinstance(kernel_size, (str, bytes, bool))
                else _pair(kernel_size, "kernel_size")
            )
        except TypeError:  # neither a number nor a sequence
            sizes = []
        # Integers only (a SymInt under torch.compile is one): a string or a float is refused, not
        # converted.
        if not sizes or any(
            isinstance(k, bool) or not (isinstance(k, numbers.Integral) or _is_sym_int(k))
            for k in sizes
        ):
            raise ValueError(
                f"kernel_size must be an odd positive integer or two of them; got {kernel_size!r}"
            )
        kx, ky = (int(k) for k in sizes)
        for k in (kx, ky):
            if k % 2 == 0 or k < 1:
                raise ValueError(
                    f"kernel_size should have odd and positive integers. Got {kernel_size}"
                )
        if _framework(sigma) is not None:
            _check_reflect_padding(images, kx, ky, border, layout)
            return _per_image_blur(ops, images, kx, ky, sigma, border, layout, options)
        if sigma is None:
            sigma = [k * 0.15 + 0.35 for k in (kx, ky)]
        sx, sy = (float(s) for s in _pair(sigma, "sigma"))
        for s in (sx, sy):
            if s <= 0.0:  # torchvision's test: a NaN sigma passes, and blurs to NaN
                raise ValueError(f"sigma should have positive values. Got {sigma}")
        _check_reflect_padding(images, kx, ky, border, layout)
        if _torch_compiling():
            # torch.compile makes a sigma that changes between calls symbolic: the taps are then
            # computed in the graph, in float64 and rounded as the op rounds a static table.
            torch = sys.modules["torch"]
            table = torch.cat(
                [_traced_gaussian_taps(torch, k, s, images.device) for k, s in ((kx, sx), (ky, sy))]
            ).to(getattr(torch, _compute_dtype(images)))
        else:
            table = gaussian_taps(kx, sx) + gaussian_taps(ky, sy)  # rounded by the op
        return ops.separable_filter(
            images, table, kx, column_taps=ky, border=border, layout=layout, **options
        )

    return gaussian_blur


def _check_reflect_padding(images, kx, ky, border, layout):
    """Refuses what torchvision refuses: reflect padding of k // 2 not less than the image's size.

    torchvision pads with torch.nn.functional.pad(mode="reflect"), which reflects once; the op
    itself folds again as often as the kernel needs. Empty images pass (torchvision returns them
    before padding), and so do sizes unknown until run time.
    """
    if border != "reflect":
        return
    shape = getattr(images, "shape", None)
    shape = tuple(np.shape(images) if shape is None else shape)
    if len(shape) < (3 if layout == "channels_last" else 2):
        return  # the op words the rank's error
    if any(isinstance(d, int) and d == 0 for d in shape):
        return
    h_axis, w_axis = (-3, -2) if layout == "channels_last" else (-2, -1)
    for k, axis, name in ((kx, w_axis, "width"), (ky, h_axis, "height")):
        size = shape[axis]
        if isinstance(size, int) and k // 2 >= size:
            raise ValueError(
                f"kernel_size {k} needs reflect padding of {k // 2}, which must be less than the "
                f"image's {name} ({size}), as torchvision's padding requires"
            )


def _per_image_blur(ops, images, kx, ky, sigma, border, layout, options):
    """gaussian_blur with a (B, 2) tensor of (sigma_x, sigma_y): the taps in the framework."""
    xp = _Xp(_framework(sigma))
    dtype = _compute_dtype(images)
    sigma = xp.asarray(sigma, dtype, images)
    if len(sigma.shape) != 2 or sigma.shape[1] != 2:
        raise ValueError(f"sigma must have shape (B, 2); got {tuple(sigma.shape)}")

    def taps(k, s):  # [B, k] from [B, 1]: torchvision's formula, max subtracted (at x = 0)
        lim = (k - 1) / (2.0 * math.sqrt(2.0))
        x = xp.reshape(xp.linspace(-lim, lim, k, dtype, images), (1, k))
        values = xp.exp(-((x / s) ** 2))
        return values / xp.sum_last(values)

    sx = xp.reshape(sigma[:, 0], (-1, 1))
    sy = xp.reshape(sigma[:, 1], (-1, 1))
    table = xp.reshape(xp.concat([taps(kx, sx), taps(ky, sy)], 1), (-1,))
    return ops.separable_filter(
        images, table, kx, column_taps=ky, border=border, layout=layout, **options
    )


FUNCTIONS = {"separable_filter2d": _make_separable_filter2d, "gaussian_blur": _make_gaussian_blur}
