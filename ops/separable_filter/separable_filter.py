# SPDX-License-Identifier: Apache-2.0
"""SeparableFilter in Python: signature, gradient, Keras layer and functions, for every framework.

The op's C++ description (separable_filter_op.h) gives its names, its two tables and attributes;
this file what the Python packages add to them (constmem.ops): the raw op
`separable_filter(images, row_taps, column_taps, taps="shared", ...)` with the row and column taps
as two tables, `separable_filter2d(images, row_taps, column_taps, ...)`, which also takes them per
image as [B, k], and `gaussian_blur(images, kernel_size, sigma=None, ...)`, torchvision's.
"""

from __future__ import annotations

import fractions
import functools
import math
import numbers
import sys
import typing

import numpy as np
from constmem.ops import BATCH, Axes, Halo
from constmem.ops._functions import (
    REQUIRED,
    WIDENED_DTYPES,
    Required,
    argument,
    signature,
    torch_compiling,
    widened,
)
from constmem.ops._functions import dtype_name as _dtype_name
from constmem.ops._functions import framework as _framework

# The name of the module constant that holds the most entries a table takes.
LIMIT = "MAX_SEPARABLE_TABLE"
# The most taps along either axis (kSeparableMaxTaps): the table limit of every op, 2^20.
MAX_AXIS_TAPS = 1 << 20
SIGNATURE = ("images", "row_taps", "column_taps")
DEFAULTS = {"taps": "shared", "border": "reflect", "layout": "channels_first"}
DOC = """Filters every image with a separable 2-D filter, the output the size of the input.

Each image is correlated along its width with the kw `row_taps`, then along its height with the
kh `column_taps`: `tmp[y, x] = sum_j row[j] * in[y, x + j - cw]`,
`out[y, x] = sum_i col[i] * tmp[y + i - ch, x]`, `c = (k - 1) // 2` on each axis, one fused
multiply-add per tap in tap order from +0, on the CPU as on the GPU, so that the two agree bit for
bit. The GPU kernel reads the taps from `__constant__` memory (or a by-value kernel parameter)
with warp-uniform indices, one fused pass per tile; filters whose tiles do not fit the GPU's
shared memory (from about 300 taps an axis in float32 on an H200) run in two passes through an
intermediate in global memory, their taps read from there too, with the same results.

Args:
  images: channels_first `[..., C, H, W]` (every axis before C an image; rank 2 is one plane) or
    channels_last `[..., H, W, C]` (every axis before H an image): float32, float64, or uint8
    (computed in float32, then rounded half to even and clamped to [0, 255], as torchvision
    rounds uint8 images).
  row_taps: the kw taps along the width, `[kw]`, or with taps="per_image" `[B * kw]` (B the
    number of images, image b's at `b * kw`); at most 2^20 entries. float32 for float32 and uint8
    images, float64 for float64 images; a tensor, or a Python or NumPy sequence (fixed per call
    site).
  column_taps: the kh taps along the height, `[kh]` or `[B * kh]`, as row_taps (each table in
    its own form).
  taps: "shared" (every image the same taps) or "per_image" (each table B sets of taps).
  border: "reflect" (reflect-101: `... 2 1 | 0 1 2 ...`, torch's "reflect", OpenCV's
    BORDER_REFLECT_101, scipy's "mirror"), "zeros" or "replicate" (scipy's "nearest").
  layout: "channels_first" or "channels_last".

Gradients flow to float images (the same filter with each tap set reversed, the border's adjoint
folding gradients back onto the pixels they were read from) and to each tensor table; none through
uint8 images. In TensorFlow the gradients need static image shapes unless the border is "zeros"
and no taps gradient is asked (and a static number of images with taps="per_image").
"""


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


def _table_rule(images, row_size, column_size, attrs):
    """(kw, kh, per_image) of tables of these sizes for `images` images (None: unknown), checked.

    Per image, each table holds one set of taps per image: kw and kh are its size over B (None
    where B is unknown).
    """
    per_image = attrs["taps"] == "per_image" and images != 0
    if not per_image:
        return row_size, column_size, False
    if images is None:
        return None, None, True
    for name, size in (("row_taps", row_size), ("column_taps", column_size)):
        if size % images:
            raise ValueError(
                f"{name} must have the same number of taps for each of the {images} images; "
                f"got {size} entries"
            )
    return row_size // images, column_size // images, True


def output_shape(shape, row_taps, column_taps, attrs, maximum=max):
    """The images' shape; refuses a rank or table sizes the op refuses, where they are known."""
    images, _ = _geometry(shape, attrs["layout"])
    if isinstance(row_taps, int) and isinstance(column_taps, int):
        _table_rule(images, row_taps, column_taps, attrs)
    return tuple(shape)


def axes(shape, row_taps, column_taps, attrs):
    """Image axes and channels are BATCH; height and width Halos of the taps, with the border.

    Per-image taps hold a block for each image (the axes before C or H).
    """
    images, (h_axis, w_axis) = _geometry(shape, attrs["layout"])
    kw, kh, per_image = _table_rule(images, row_taps, column_taps, attrs)
    roles = [BATCH] * len(shape)
    for axis, k in ((h_axis, kh), (w_axis, kw)):  # the op's borders are Halo's, by name
        roles[axis] = Halo((k - 1) // 2, k - 1 - (k - 1) // 2, attrs["border"])
    image_axes = tuple(range(len(shape) - 3))
    split = image_axes if per_image and image_axes else None
    return Axes(tuple(roles), (split, split))


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


# The Keras layer: its row and column taps trainable, a unit impulse at each axis's centre at first,
# shared by every image.
def _impulse(k, attrs):
    return [1.0 if j == (k - 1) // 2 else 0.0 for j in range(k)]


LAYER = {
    "name": "SeparableFilter",
    "tables": (
        {"size": "row_taps", "initial": _impulse, "weight": "row_taps", "variable": "row_kernel"},
        {
            "size": "column_taps",
            "initial": _impulse,
            "weight": "column_taps",
            "variable": "column_kernel",
        },
    ),
    "fixed": {"taps": "shared"},
}


def _adjoint(F, g, row, column, axis, n, k, attrs):
    """The adjoint of one axis's pass (with the border) applied to g along `axis`.

    A zero-border filter with that axis's taps reversed (and the other axis's a 1) over g padded
    to the n + k - 1 positions the pass read, then each position's sum folded back onto the pixel
    it was read from.
    """
    c = (k - 1) // 2
    padded = F.pad_axis(g, axis, k - 1 - c, c)
    full = F.op(padded, row, column, border="zeros")
    full = F.pad_axis(full, axis, 0, 1)  # a zero at n + k - 1 for pixels read fewer times
    layers = _fold_layers(n, k, attrs["border"])
    total = F.take(full, layers[0], axis)
    for layer in layers[1:]:
        total = total + F.take(full, layer, axis)
    return total


def _reversed(F, table, blocks, k):
    """Each of the table's `blocks` sets of k taps reversed."""
    return F.take(
        table, np.concatenate([np.arange(b * k + k - 1, b * k - 1, -1) for b in range(blocks)]), 0
    )


def backward(
    F, grad, images, row_taps, column_taps, attrs, need_images, need_row_taps, need_column_taps
):
    """D images: the passes' adjoints in reverse order; d taps: the passes' correlations."""
    shape = tuple(images.shape)
    count, (h_axis, w_axis) = _geometry(shape, attrs["layout"])
    kw, kh, per_image = _table_rule(count, F.length(row_taps), F.length(column_taps), attrs)
    if kw is None:
        raise ValueError(
            "SeparableFilter's gradient needs a static number of images for taps='per_image'"
        )
    blocks = count if per_image else 1
    ones = F.zeros(blocks, row_taps) + 1  # a filter of one tap along the other axis
    h = _static(F, images, h_axis)
    w = _static(F, images, w_axis)
    # The column pass's adjoint: row taps [1], the column taps reversed.
    g_rows = _adjoint(F, grad, ones, _reversed(F, column_taps, blocks, kh), h_axis, h, kh, attrs)
    grad_images = grad_row = grad_column = None
    if need_images:
        row_reversed = _reversed(F, row_taps, blocks, kw)
        grad_images = _adjoint(F, g_rows, row_reversed, ones, w_axis, w, kw, attrs)
    if need_row_taps or need_column_taps:
        # The row pass alone (column taps [1]), as the column pass reads it, padded by the border.
        rows = F.op(images, row_taps, ones)
        rows = F.take(
            F.pad_axis(rows, h_axis, 0, 1), _source_indices(h, kh, attrs["border"]), h_axis
        )
        samples = F.take(
            F.pad_axis(images, w_axis, 0, 1), _source_indices(w, kw, attrs["border"]), w_axis
        )

        def sums(product):  # per image, or over everything for a shared table
            return F.row_sums(F.reshape(product, (blocks, -1)))

        def image_major(tap_sums, k):  # tap-major sums, reordered: image b's k taps in order
            order = np.asarray([t * blocks + b for b in range(blocks) for t in range(k)])
            return F.take(F.concat(tap_sums), order, 0)

        if need_row_taps:
            row_sums = [
                sums(g_rows * F.take(samples, np.arange(j, j + w), w_axis)) for j in range(kw)
            ]
            grad_row = image_major(row_sums, kw)
        if need_column_taps:
            column_sums = [
                sums(grad * F.take(rows, np.arange(i, i + h), h_axis)) for i in range(kh)
            ]
            grad_column = image_major(column_sums, kh)
    return grad_images, grad_row, grad_column


# ---- Functions built on the op ----

# The images the functions take: float16 and bfloat16 are the op's own where its library takes
# them (computed in float32 in one pass), else cast to float32 and back (widened).
IMAGE_DTYPES = ("float32", "float64", "uint8", *WIDENED_DTYPES)
# gaussian_blur's other names for the images: torchvision's (v2's, then v1's).
IMAGE_ALIASES = ("inpt", "img")


# Bit layout of each compute dtype: (integer of its size, mantissa bits, exponent bias).
_FLOAT_BITS = {"float32": ("int32", 23, 127), "float64": ("int64", 52, 1023)}


def _reciprocal(F, t, dtype):
    """1 / t, correctly rounded in every framework and on every device.

    XLA's float32 division on a GPU is within an ulp, not correctly rounded (`div.full.f32`). A
    positive normal float32 whose reciprocal is normal is inverted here by long division of 2**47
    by its 24-bit significand in int32 (exact everywhere) and rounded to nearest; any other
    value, and float64 (divided correctly everywhere), by the framework's division.
    """
    divided = 1.0 / t
    if dtype != "float32":
        return divided
    bits = F.bitcast(t, "int32")
    exponent = F.shift_right(bits, 23)  # biased; the sign bit is 0 where the result is used
    fraction = F.low_bits(bits, 23)
    significand = fraction + (1 << 23)
    quotient, rest = F.zeros_like(bits), F.zeros_like(bits) + (1 << 23)
    for step in (7, 7, 7, 3):  # 24 quotient bits; rest * 2**7 < 2**31
        shifted = F.shift_left(rest, step)
        digit = shifted // significand
        rest = shifted - digit * significand
        quotient = F.shift_left(quotient, step) + digit
    rounded = quotient + F.astype(2 * rest > significand, "int32")
    # 1 / (m 2**(e - 23)) = (q / 2**23) 2**(-e - 1): biased exponent 253 - e; a carry out of the
    # significand moves into the exponent. A power of two inverts exactly.
    power = F.astype(fraction == 0, "int32")
    result = F.shift_left(253 + power - exponent, 23) + (rounded - (1 << 23)) * (1 - power)
    usable = (t > 0) & (exponent >= 1) & (exponent <= 252)
    inverted = F.bitcast(result * F.astype(usable, "int32"), "float32")
    # The integers carry no gradient: the value is the long division's, the gradient the
    # division's. Where usable both are normal and within an ulp, so the difference and the sum
    # are exact (Sterbenz): the value is `inverted`'s bits.
    inverted = divided + F.stop_gradient(inverted - divided)
    return F.where(usable, inverted, divided)


def _power_of_two(F, n, dtype):
    """2**n for integral n of the dtype's normal range, made from its exponent bits (exact)."""
    integer, mantissa, bias = _FLOAT_BITS[dtype]
    return F.bitcast(F.shift_left(F.astype(n, integer) + bias, mantissa), dtype)


def _compute_dtype(images):
    return "float64" if _dtype_name(images) == "float64" else "float32"


def _is_channels_last(images):
    """Whether images is a 4-D torch tensor in the channels_last memory format.

    And not contiguous NCHW as well, as a tensor of one channel or one pixel is.
    """
    torch = sys.modules.get("torch")
    return (
        torch is not None
        and isinstance(images, torch.Tensor)
        and images.dim() == 4
        and not images.is_contiguous()
        and images.is_contiguous(memory_format=torch.channels_last)
    )


def _filter(ops, images, row, column, taps, border, layout, options):
    """ops.separable_filter; a channels_last NCHW torch tensor gives a channels_last result.

    Its NHWC permutation is a contiguous view, which the op filters in place as channels_last
    data, and the result's permutation back is again channels_last NCHW: no copy either way.
    """
    if layout == "channels_first" and _is_channels_last(images):
        out = ops.separable_filter(
            images.permute(0, 2, 3, 1),
            row,
            column,
            taps=taps,
            border=border,
            layout="channels_last",
            **options,
        )
        return out.permute(0, 3, 1, 2)
    return ops.separable_filter(
        images, row, column, taps=taps, border=border, layout=layout, **options
    )


def _shape(value):
    """A tensor's or NumPy array's shape, or a Python sequence's as its nesting gives it.

    Plain Python for a sequence, which torch.compile traces.
    """
    if _framework(value) is not None or isinstance(value, np.ndarray):
        return tuple(value.shape)
    value = list(value)
    if value and isinstance(value[0], (list, tuple, np.ndarray)):
        return (len(value), len(value[0]))
    return (len(value),)


def _flat(F, value):
    """A [B, k] table as a vector in its own form."""
    if isinstance(value, np.ndarray):
        return value.reshape(-1)
    if _framework(value) is not None:
        return F.reshape(value, (-1,))
    return [v for row in value for v in row]


def _tap_tables(F, row, column):
    """The op's two tables from row and column taps, each [k] (shared) or [B, k] (per image).

    Returns (row, column, taps): each table a vector in its own form (a tensor, a NumPy array, a
    Python list), taps "shared" or "per_image".
    """
    shapes = [_shape(row), _shape(column)]
    if len(shapes[0]) != len(shapes[1]) or len(shapes[0]) not in (1, 2):
        raise ValueError(
            "row_taps and column_taps must both be [k] (shared) or [B, k] (per image); "
            f"got shapes {shapes[0]} and {shapes[1]}"
        )
    if len(shapes[0]) == 1:
        return row, column, "shared"
    if shapes[0][0] != shapes[1][0]:
        raise ValueError(
            "row_taps and column_taps must have a row per image each; got shapes "
            f"{shapes[0]} and {shapes[1]}"
        )
    return _flat(F, row), _flat(F, column), "per_image"


def _make_separable_filter2d(ops):
    F = ops._arrays("separable_filter")

    def separable_filter2d(
        images, row_taps, column_taps, border="reflect", layout="channels_first", **options
    ):
        """A separable filter from its two tap sets: `row_taps` (along W) then `column_taps`.

        Each is a vector `[k]` shared by every image, or `[B, k]` one row per image (B > 1);
        a tensor, or a Python or NumPy sequence (fixed per call site). The rest is as for
        `separable_filter` (border, layout; TensorFlow's `source` and `name` in `options`), and
        float16 and bfloat16 images are filtered in float32 and returned in their own dtype; a
        channels_last PyTorch tensor stays channels_last.
        """
        return _separable_filter2d(ops, F, images, row_taps, column_taps, border, layout, options)

    return separable_filter2d


def _separable_filter2d(ops, F, images, row_taps, column_taps, border, layout, options):
    """Separable_filter2d's body: the [k] or [B, k] tap sets as the op's two tables."""
    images, restore = widened(images, "images", IMAGE_DTYPES, _native(ops))
    row, column, taps = _tap_tables(F, row_taps, column_taps)
    return restore(_filter(ops, images, row, column, taps, border, layout, options))


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


@functools.lru_cache(maxsize=256)
def _cached_gaussian_taps(kernel_size, sigma):
    """gaussian_taps as a tuple, made once per size and sigma.

    A call site blurs with the same ones again and again, and making them costs more than the
    rest of a small call's Python.
    """
    return tuple(gaussian_taps(kernel_size, sigma))


def _is_sym_int(value):
    """Whether `value` is torch.compile's symbolic int (where torch is loaded)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.SymInt)


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


def _is_integer(value):
    """Whether `value` is an integer (a SymInt under torch.compile is one), not a bool."""
    if type(value) is int:
        return True
    return not isinstance(value, bool) and (
        isinstance(value, numbers.Integral) or _is_sym_int(value)
    )


def _is_real(value):
    """Whether `value` is a real number (symbolic ones under torch.compile too), not a bool."""
    kind = type(value)
    if kind is float or kind is int:
        return True
    if isinstance(value, bool):
        return False
    torch = sys.modules.get("torch")
    return isinstance(value, numbers.Real) or (
        torch is not None and isinstance(value, (torch.SymInt, torch.SymFloat))
    )


# The sequences gaussian_blur takes for kernel_size and sigma (a str is refused, not read).
_SEQUENCES = (list, tuple, np.ndarray)


def kernel_sizes(kernel_size):
    """(kx, ky) of gaussian_blur's kernel_size, checked as torchvision's v2 functional checks it.

    An integer, or a sequence of two. TypeError for what is neither (a str, a float, a bool),
    ValueError for a sequence of another length or sizes that are not odd and positive; each
    names the argument and shows its value.
    """
    if _is_integer(kernel_size):
        sizes = (kernel_size, kernel_size)
    elif isinstance(kernel_size, _SEQUENCES):
        if len(kernel_size) != 2:
            raise ValueError(
                "If kernel_size is a sequence its length should be 2 (kx, ky). Got "
                f"{len(kernel_size)}: {kernel_size!r}"
            )
        sizes = tuple(kernel_size)
    else:
        sizes = ()
    if not sizes or not all(_is_integer(k) for k in sizes):
        raise TypeError(
            "kernel_size must be an odd positive integer or a sequence of two; got "
            f"{kernel_size!r} ({type(kernel_size).__name__})"
        )
    kx, ky = (int(k) for k in sizes)
    if kx % 2 == 0 or kx < 1 or ky % 2 == 0 or ky < 1:
        raise ValueError(f"kernel_size should have odd and positive integers. Got {kernel_size!r}")
    return kx, ky


def _sigmas(sigma, kx, ky):
    """(sigma_x, sigma_y) of gaussian_blur's number or sequence sigma, as torchvision takes it.

    None: torchvision's default for each size. A number, or a sequence of one or two numbers.
    TypeError for anything else (a str, a bool, a sequence holding them), ValueError for a
    sequence of another length or a value that is not positive (a NaN passes, and blurs to NaN,
    as in torchvision).
    """
    if sigma is None:
        return kx * 0.15 + 0.35, ky * 0.15 + 0.35
    if _is_real(sigma):
        values = (sigma, sigma)
    elif isinstance(sigma, _SEQUENCES):
        if len(sigma) not in (1, 2):
            raise ValueError(
                "If sigma is a sequence, its length should be 2 (sigma_x, sigma_y) or 1. Got "
                f"{len(sigma)}: {sigma!r}"
            )
        values = (sigma[0], sigma[-1])
    else:
        values = ()
    if not values or not all(_is_real(s) for s in values):
        raise TypeError(
            "sigma should be either float or sequence of floats (or a tensor). Got "
            f"{sigma!r} ({type(sigma).__name__})"
        )
    sx, sy = (float(s) for s in values)
    if sx <= 0.0 or sy <= 0.0:
        raise ValueError(f"sigma should have positive values. Got {sigma!r}")
    return sx, sy


# The types of the numbers of a plain call, whose checked taps a call site's gaussian_blur keeps.
_PLAIN_NUMBERS = frozenset((float, int))
_PLAIN_TAPS_SIZE = 256


def _plain_key(kernel_size, sigma):
    """A key of gaussian_blur's taps for a plain call's kernel_size and sigma, or None.

    Plain: Python ints for the size (one, or a list or tuple of two), and no sigma or Python
    numbers for it (one, or a list or tuple of one or two). Equal keys are the same blur (k and
    (k, k), s and [s, s]).
    """
    kind = type(kernel_size)
    if kind is int:
        sizes = (kernel_size, kernel_size)
    elif (kind is list or kind is tuple) and len(kernel_size) == 2:
        sizes = (kernel_size[0], kernel_size[1])
        if type(sizes[0]) is not int or type(sizes[1]) is not int:
            return None
    else:
        return None
    kind = type(sigma)
    if sigma is None or kind in _PLAIN_NUMBERS:
        return sizes, sigma, sigma
    if (kind is list or kind is tuple) and 1 <= len(sigma) <= 2:
        pair = (sigma[0], sigma[-1])
        if type(pair[0]) in _PLAIN_NUMBERS and type(pair[1]) in _PLAIN_NUMBERS:
            return sizes, *pair
    return None


# The modules of the images gaussian_blur unwraps and wraps again: PIL images, tv_tensors.
_WRAPPED_MODULES = ("PIL.", "torchvision.")


def _wrapped_input(F, images, name):
    """(plain images, what wraps a result as `images` was) for a PIL image or a tv_tensor.

    A PIL image's pixels as an [H, W, C] channels_last array of the framework (H, W a channel of
    its own for one-band modes), given back as a PIL image of the same mode and size, as
    torchvision blurs it. A tv_tensors Image or Video as a plain tensor, wrapped again as its
    type (torchvision's tv_tensors.wrap); the other tv_tensors are refused as torchvision's
    functional refuses them (TypeError). Returns None for anything else.
    """
    pil = sys.modules.get("PIL.Image")
    if pil is not None and isinstance(images, pil.Image):
        pixels = np.array(images)  # writable, as a tensor's memory must be
        if pixels.dtype not in (np.uint8, np.float32):
            raise ValueError(
                f"{name} as a PIL image must be of a mode of uint8 or float32 pixels (L, RGB, "
                f"RGBA, F, ...); got mode {images.mode!r}"
            )
        planar = pixels.ndim == 2
        pixels = pixels[..., np.newaxis] if planar else pixels
        plain = F.astype(pixels, pixels.dtype.name)

        def as_pil(result):
            out = np.ascontiguousarray(np.asarray(result))
            blurred = pil.frombytes(images.mode, images.size, out.tobytes())
            if images.mode == "P":
                blurred.putpalette(images.getpalette())
            return blurred

        return plain, as_pil, "channels_last"
    tv_tensors = sys.modules.get("torchvision.tv_tensors")
    if tv_tensors is not None and isinstance(images, tv_tensors.TVTensor):
        if not isinstance(images, (tv_tensors.Image, tv_tensors.Video)):
            raise TypeError(
                f"gaussian_blur takes tv_tensors Image and Video as {name}, as torchvision's "
                f"functional does; got {type(images)}"
            )
        plain = images.as_subclass(sys.modules["torch"].Tensor)
        return plain, lambda result: tv_tensors.wrap(result, like=images), None
    return None


# torchvision's annotations of gaussian_blur's arguments: typing's Optional, which `X | None` does
# not equal before Python 3.14.
_TORCHVISION_ANNOTATIONS = {"kernel_size": list[int], "sigma": typing.Optional[list[float]]}  # noqa: UP045


def _native(ops) -> tuple:
    """The dtypes the op takes itself (no cast around it), by name."""
    return ops.OPS["separable_filter"].data_dtypes()


class _BlurState:
    """What one framework's gaussian_blur keeps between calls."""

    __slots__ = (
        "F",
        "direct_dtypes",
        "is_compiling",
        "ops",
        "plain_taps",
        "separable",
        "tensor_type",
    )

    def __init__(self, ops):
        self.ops = ops
        self.F = ops._arrays("separable_filter")
        self.separable = ops.separable_filter
        # In PyTorch: its tensor type, its compile check and the dtypes the op takes itself.
        self.tensor_type, self.is_compiling, self.direct_dtypes = None, torch_compiling, frozenset()
        if getattr(ops, "__name__", "").rpartition(".")[2] == "torch":
            torch = sys.modules["torch"]
            self.tensor_type, self.is_compiling = torch.Tensor, torch.compiler.is_compiling
            self.direct_dtypes = frozenset(getattr(torch, d) for d in _native(ops))
        # _plain_key of plain calls -> (kx, ky, row taps, column taps), checked once: a call site
        # passes the same again and again, and their checks cost more than the rest of a small
        # call.
        self.plain_taps = {}


def _make_gaussian_blur(ops):
    blur = _BlurState(ops)

    def gaussian_blur(
        images=REQUIRED,
        kernel_size=REQUIRED,
        sigma=None,
        border="reflect",
        layout="channels_first",
        **options,
    ):
        """torchvision.transforms.v2.functional.gaussian_blur, on constmem's separable filter.

        The same taps (torchvision's `_get_gaussian_kernel1d`), border ("reflect") and uint8
        rounding (half to even), so that switching is one import: the results agree within
        float32 rounding (torchvision convolves with the 2-D outer product of the taps; this
        filters rows then columns). torchvision's argument names are taken too: its v2 and v1
        names for `images` (IMAGE_ALIASES).

        Args:
          images: `[..., C, H, W]` (or `[..., H, W, C]` with layout="channels_last"): float32,
            float64, uint8, or float16 and bfloat16 (filtered in float32, returned in their own
            dtype). A channels_last PyTorch tensor gives a channels_last result. In PyTorch a
            tv_tensors Image or Video gives one back, and a PIL image (of uint8 or float32
            pixels) a PIL image, as torchvision's functional does.
          kernel_size: odd k, or (kx, ky) (x along the width): any odd positive sizes, as
            torchvision. With border="reflect" each half, k // 2, must be less than the image's
            size along its axis, as torchvision's reflect padding requires (ValueError).
          sigma: None (each axis's `0.15 * k + 0.35`, torchvision's default), one value, a
            sequence of one or two (sigma_x, sigma_y), or a tensor: of shape () or (2,) for
            every image, or (B, 2) with one (sigma_x, sigma_y) per image (kornia takes (B, 2)
            too, but as (sigma_y, sigma_x)). A tensor's taps are computed in the framework, with
            the same bits in every framework and on every device (except under torch.compile on
            a GPU, whose generated division need not round as the eager one), and may be traced
            (torch.compile, jax.jit, jax.vmap over sigma). A tensor on the host is checked to be
            positive and finite (ValueError) where its values are known (not while traced); a
            tensor on a GPU is not, since reading it would wait for the device: its zero,
            negative or NaN values give NaN or meaningless images. A tensor on the meta device
            blurs meta images (a meta result).
          border: "reflect" (torchvision's), "zeros" or "replicate".
          layout: "channels_first" or "channels_last".
          **options: TensorFlow's `source` and `name`.

        Raises TypeError for arguments of the wrong type and ValueError for bad values, as
        torchvision does, each naming the argument and showing what it was.

        """
        return _gaussian_blur(blur, images, kernel_size, sigma, border, layout, options)

    gaussian_blur.__signature__ = signature(gaussian_blur, _TORCHVISION_ANNOTATIONS)
    return gaussian_blur


def _gaussian_blur(blur, images, kernel_size, sigma, border, layout, options):
    """Gaussian_blur's body, with `blur` its framework's state (_BlurState)."""
    kind = type(images)
    tensor_type = blur.tensor_type
    key = _plain_key(kernel_size, sigma)
    if (
        key is not None
        and not options
        and (kind is tensor_type or (tensor_type is None and _framework(images) is not None))
        and not blur.is_compiling()  # the cache is not traced (nor guarded on)
    ):
        hit = blur.plain_taps.get(key)
        if hit is not None:
            # A call site's checked size and sigma again: the taps are the op's static tables.
            kx, ky, row, column = hit
            if (
                kind is tensor_type
                and layout == "channels_first"
                and images.dtype in blur.direct_dtypes
                and images.is_contiguous()
            ):
                # An NCHW tensor of the op's own dtype: nothing to widen or permute, and
                # only the reflect border's size to check (an empty image takes the path
                # below).
                shape = images.shape
                if len(shape) >= 2 and (
                    border != "reflect" or (kx // 2 < shape[-1] and ky // 2 < shape[-2])
                ):
                    return blur.separable(images, row, column, border=border, layout=layout)
            images, restore = widened(images, "images", IMAGE_DTYPES, _native(blur.ops))
            _check_reflect_padding(images, kx, ky, border, layout)
            return restore(_filter(blur.ops, images, row, column, "shared", border, layout, {}))
    name = "images"
    if options or isinstance(images, Required):
        aliases = [(a, options.pop(a)) for a in IMAGE_ALIASES if a in options]
        name, images = argument("gaussian_blur", [("images", images), *aliases])
        kind = type(images)
    if isinstance(kernel_size, Required):
        raise TypeError("gaussian_blur() missing required argument: 'kernel_size'")
    if kind.__module__.startswith(_WRAPPED_MODULES):
        wrapped = _wrapped_input(blur.F, images, name)
        if wrapped is not None:
            plain, wrap, inner_layout = wrapped
            out = _gaussian_blur(
                blur, plain, kernel_size, sigma, border, inner_layout or layout, options
            )
            return wrap(out)
    if tensor_type is not None and not isinstance(images, tensor_type):
        raise TypeError(
            f"gaussian_blur takes a torch.Tensor, a tv_tensors Image or Video, or a PIL image "
            f"as {name}; got {kind}"
        )
    images, restore = widened(images, name, IMAGE_DTYPES, _native(blur.ops))
    kx, ky = kernel_sizes(kernel_size)
    if _framework(sigma) is not None:
        _check_reflect_padding(images, kx, ky, border, layout)
        row, column, taps = _tensor_sigma_tables(blur.ops, blur.F, images, kx, ky, sigma)
        return restore(_filter(blur.ops, images, row, column, taps, border, layout, options))
    sx, sy = _sigmas(sigma, kx, ky)
    _check_reflect_padding(images, kx, ky, border, layout)
    if torch_compiling():
        # torch.compile makes a sigma that changes between calls symbolic: the taps are then
        # computed in the graph, in float64 and rounded as the op rounds a static table.
        torch_module = sys.modules["torch"]
        dtype = getattr(torch_module, _compute_dtype(images))
        row, column = (
            _traced_gaussian_taps(torch_module, k, s, images.device).to(dtype)
            for k, s in ((kx, sx), (ky, sy))
        )
    else:
        # Rounded by the op.
        row, column = _cached_gaussian_taps(kx, sx), _cached_gaussian_taps(ky, sy)
        if key is not None:
            if len(blur.plain_taps) >= _PLAIN_TAPS_SIZE:
                blur.plain_taps.clear()
            blur.plain_taps[key] = (kx, ky, row, column)
    return restore(_filter(blur.ops, images, row, column, "shared", border, layout, options))


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


def _host_values(value):
    """A tensor's values as float64 NumPy where the host holds them, else None.

    None for a tensor on a GPU (reading it would wait for the device), on the meta device, or
    traced (torch.compile, jax.jit, tf.function).
    """
    framework = _framework(value)
    if framework == "torch":
        if value.device.type != "cpu" or torch_compiling():
            return None
        torch = sys.modules["torch"]
        if torch._C._functorch.is_functorch_wrapped_tensor(value):  # torch.func.vmap's
            return None
        return value.detach().to(torch.float64).numpy()
    if framework == "jax":
        jax = sys.modules["jax"]
        if isinstance(value, jax.core.Tracer):
            return None
        if any(device.platform != "cpu" for device in value.devices()):
            return None
        return np.asarray(value, np.float64)
    if framework == "tensorflow":
        tf = sys.modules["tensorflow"]
        if not (tf.executing_eagerly() and hasattr(value, "numpy")):
            return None
        if "GPU" in value.device:
            return None
        return np.asarray(value.numpy(), np.float64)
    return None


def _checked_sigma(F, sigma, images, dtype):
    """A sigma tensor as its (sigma_x, sigma_y) columns, each [B, 1] (B = 1: every image)."""
    shape = tuple(sigma.shape)
    if shape not in ((), (1,), (2,)) and not (len(shape) == 2 and shape[1] == 2):
        raise ValueError(
            f"sigma must be a tensor of shape () or (2,) for every image, or (B, 2) for each; "
            f"got shape {shape}"
        )
    if (
        _framework(sigma) == "torch"
        and sigma.device.type == "meta"
        and getattr(images, "device", None) != sigma.device
    ):
        raise ValueError(
            "sigma is on the meta device, which holds no values: it blurs only meta images; got "
            f"images on {images.device}"
        )
    values = _host_values(sigma)
    if values is not None:
        bad = values[~(np.isfinite(values) & (values > 0))]
        if bad.size:
            raise ValueError(f"sigma must hold positive finite values; got {float(bad[0])} in it")
    sigma = F.reshape(F.astype(sigma, dtype, images), (-1,) if len(shape) < 2 else (-1, 2))
    if len(shape) < 2:  # one sigma, or one pair, for every image
        sigma = F.reshape(sigma if shape == (2,) else F.concat([sigma, sigma]), (1, 2))
    return sigma[:, 0:1], sigma[:, 1:2]


def _tensor_sigma_tables(ops, F, images, kx, ky, sigma):
    """gaussian_blur's row and column tables for a sigma tensor, computed in the images' framework.

    Returns (row, column, taps): taps "per_image" for a (B, 2) sigma, else "shared".
    """
    dtype = _compute_dtype(images)
    sx, sy = _checked_sigma(F, sigma, images, dtype)
    taps = "per_image" if len(tuple(sigma.shape)) == 2 else "shared"
    if taps == "per_image":
        count, _ = _geometry(tuple(getattr(images, "shape", ())), "channels_first")
        if isinstance(count, int) and sigma.shape[0] != count:
            raise ValueError(
                f"sigma of shape (B, 2) must have a row per image ({count}); got shape "
                f"{tuple(sigma.shape)}"
            )
    if kx == ky:  # both axes' taps in one chain of calls: [2B, k], then each axis's
        both = F.reshape(_gaussian_taps_of(ops, F, kx, F.concat([sx, sy]), dtype), (2, -1))
        return both[0], both[1], taps
    row, column = (_gaussian_taps_of(ops, F, k, s, dtype) for k, s in ((kx, sx), (ky, sy)))
    return F.reshape(row, (-1,)), F.reshape(column, (-1,)), taps


# exp(t) for t <= 0 by operations of one rounding each: t = n ln2 + r with n = round(t / ln2),
# r = t - n ln2 by pieces of ln2 so short that each n * piece is exact (fused into a
# multiply-add or not, one rounding), exp(r) by its Taylor polynomial (to within a fraction of
# the dtype's last bit), and 2**n from its exponent bits. Below `lowest` exp(t) is taken as 0
# (2**n would leave the dtype's normal range).
_LN2 = fractions.Fraction("0.693147180559945309417232121458176568075500134360255254120680")


def _short_pieces(value, bits, count):
    """`count` floats of `bits` significant bits each whose sum is `value` to their precision."""
    pieces = []
    for _ in range(count):
        mantissa, exponent = math.frexp(float(value))
        piece = math.ldexp(round(mantissa * 2**bits), exponent - bits)
        pieces.append(piece)
        value -= fractions.Fraction(piece)
    return tuple(pieces)


_EXP = {
    # (lowest t, 1 / ln2 in the dtype, pieces of ln2, Taylor coefficients highest degree first):
    # n is at most 116 (7 bits) in float32 and 1010 (10 bits) in float64.
    "float32": (
        -80.0,
        float(np.float32(1 / math.log(2))),
        _short_pieces(_LN2, 16, 3),
        [1 / math.factorial(d) for d in range(8, -1, -1)],
    ),
    "float64": (
        -700.0,
        1 / math.log(2),
        _short_pieces(_LN2, 42, 3),
        [1 / math.factorial(d) for d in range(14, -1, -1)],
    ),
}


def _exp(ops, F, t, dtype):
    """exp(t) for t <= 0, the same bits in every framework and on every device.

    The frameworks' own exp functions differ from each other in the last bit (and PyTorch's CPU
    one from its CUDA one); this one's polynomial is the Polyval op's (a fused multiply-add a
    step, the same everywhere), and every other operation rounds once. Where the op library has
    no Polyval, the framework's exp.
    """
    if not hasattr(ops, "polyval"):
        return F.exp(t)
    lowest, inverse_ln2, ln2_pieces, coefficients = _EXP[dtype]
    clamped = F.maximum(t, lowest)
    n = F.round(clamped * inverse_ln2)
    r = clamped
    for piece in ln2_pieces:
        r = r - n * piece
    return F.where(t < lowest, 0.0, ops.polyval(coefficients, r) * _power_of_two(F, n, dtype))


def _fixed_order_sum(ops, F, values, k):
    """The sums of the k columns of values [B, k], as [B, 1], added in one fixed order.

    The frameworks' own sums each add in an order of their own. FirFilter with k ones adds them
    left to right in one call (a fused multiply-add by one rounds as the addition does), the same
    on every device; where the op library has no FirFilter, halves added elementwise, then halves
    of those.
    """
    if hasattr(ops, "fir_filter"):
        return ops.fir_filter(values, [1.0] * k, padding="VALID")
    while k > 1:
        half = k // 2
        summed = values[:, :half] + values[:, half : 2 * half]
        values = F.concat([summed, values[:, 2 * half : k]], 1) if k % 2 else summed
        k = half + k % 2
    return values


def _gaussian_taps_of(ops, F, k, sigma, dtype):
    """[B, k] taps of torchvision's formula for the sigmas [B, 1] (of the dtype named).

    Torchvision's points are linspace(-lim, lim, k), lim = (k - 1) / (2 sqrt 2): (i - (k - 1) / 2)
    / sqrt 2, computed here as one product of exact integers and the step (no linspace, whose
    rounding differs between frameworks).
    """
    half = (k - 1) // 2
    step = 1 / math.sqrt(2.0)
    if dtype == "float32":
        step = float(np.float32(step))  # the product rounds once whatever the framework's scalar
    x = F.reshape(F.arange(-half, half + 1, 1, like=sigma) * step, (1, k))
    # Products with reciprocals, not quotients: XLA turns a division by a broadcast value into
    # that, and this way every framework rounds alike.
    q = x * _reciprocal(F, sigma, dtype)
    values = _exp(ops, F, -(q * q), dtype)
    return values * _reciprocal(F, _fixed_order_sum(ops, F, values, k), dtype)


FUNCTIONS = {"separable_filter2d": _make_separable_filter2d, "gaussian_blur": _make_gaussian_blur}
