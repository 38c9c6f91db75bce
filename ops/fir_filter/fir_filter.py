# SPDX-License-Identifier: Apache-2.0
"""FirFilter in Python: its signature, output shape, gradient and Keras layer, for every framework.

The op's C++ description (fir_filter_op.h) gives its names, table and attributes; this file what
the Python packages add to them (constmem.ops).
"""

import math

from constmem.ops import BATCH, WHOLE, Axes, Halo, _fft
from constmem.ops._functions import shape_cache

# The name of the module constant that holds the most entries the table takes.
LIMIT = "MAX_TAPS"
SIGNATURE = ("x", "taps")
DEFAULTS = {"padding": "SAME"}
DOC = """Filters every row of `x` (its last axis) with `taps`, as a correlation (`np.correlate`).

`y[..., i] = sum_j xp[..., i + j] * taps[j]`, what `tf.nn.conv1d` computes: the taps are applied
in order, one fused multiply-add each starting from +0, on the CPU as on the GPU, so that the two
agree bit for bit. `xp` is the row with zero padding: for "SAME", `(k - 1) // 2` zeros before it
and the rest after (TensorFlow's rule), as many outputs as samples; for "VALID", none, `n - k + 1`
outputs (none when the taps outnumber the samples). On a GPU the taps are read from `__constant__`
memory (or a by-value kernel parameter) with warp-uniform indices while the samples are staged in
shared memory; filters of more than 2,048 taps read theirs from global memory and stage the
samples in chunks of 2,048 taps, with the same results.

Args:
  x: float32, float64, float16 or bfloat16 (computed in float32, each output rounded once to
    x's dtype) of rank 1 or more; every leading dimension is a batch.
  taps: 1 to 1,048,576 (2^20) taps: a tensor of x's compute dtype (x's own; float32 for float16
    and bfloat16 x), or a Python or NumPy sequence (fixed per call site, rounded to it).
  padding: "SAME" or "VALID".
  method: "direct" (the kernel above: bit for bit the same on every device and in every
    framework), "fft" (overlap-save FFT convolution on the framework's own FFT, within a few
    units of rounding of the exact result times log2 of its FFT size; static shapes), or "auto"
    (the default: "direct" below the measured crossover of taps and lengths, "fft" above it,
    as scipy.signal.convolve chooses).

Gradients flow to x (the same filter with the taps reversed) and to a tensor `taps`.
"""

# The Keras layer: `taps` trainable taps, a unit impulse at the centre at first.
LAYER = {
    "name": "FirFilter",
    "size": "taps",
    "size_to_entries": lambda taps: taps,
    "initial": lambda k, attrs: [1.0 if j == (k - 1) // 2 else 0.0 for j in range(k)],
    "weight": "taps",
    "variable": "kernel",
}


def output_shape(shape, taps, attrs, maximum=max):
    """X's shape with the last dimension n (SAME) or max(n - k + 1, 0) (VALID)."""
    if len(shape) < 1:
        raise ValueError("x must have rank 1 or more (the filter runs along the last axis)")
    if attrs["padding"] == "SAME" or shape[-1] is None or taps is None:
        return tuple(shape) if attrs["padding"] == "SAME" else (*shape[:-1], None)
    return (*shape[:-1], maximum(shape[-1] - taps + 1, 0))


def axes(shape, taps, attrs):
    """Leading axes are rows; the last a Halo of the taps for SAME, read whole for VALID.

    SAME reads (k - 1) // 2 samples before an output and the rest after it, zeros past the ends;
    VALID has fewer outputs than samples.
    """
    rows = (BATCH,) * (len(shape) - 1)
    if attrs["padding"] == "VALID":
        return Axes((*rows, WHOLE), (None,))
    before = (taps - 1) // 2
    return Axes((*rows, Halo(before, taps - 1 - before, "zeros")), (None,))


def _pad_left(k, padding):
    return (k - 1) // 2 if padding == "SAME" else 0


def backward(F, grad, x, taps, attrs, need_x, need_taps):
    """dx: the taps reversed over the shifted gradient; dtaps: the padded rows against it."""
    k, n, m = F.length(taps), F.size(x, -1), F.size(grad, -1)
    pad_left = _pad_left(k, attrs["padding"])
    grad_x = grad_taps = None
    if need_x:
        # dx[i] = sum_j g[i + pad_left - j] taps[j]: VALID over g padded to n + k - 1.
        padded = F.pad_last(grad, k - 1 - pad_left, n - m + pad_left)
        grad_x = F.op(padded, F.flip(taps), padding="VALID")
    if need_taps:
        # dtaps[j] = sum over rows and outputs of g[o] xp[o + j].
        padded = F.pad_last(x, pad_left, m + k - 1 - n - pad_left)
        grad_taps = F.correlate_rows(padded, grad)
    return grad_x, grad_taps


def _make_fir_filter(ops):
    """The op's function with `method`: the direct kernel, or the FFT route for long filters."""
    direct = ops.fir_filter  # the op itself, which this function then replaces in `ops`
    F = ops._arrays("fir_filter")
    limit = getattr(ops, LIMIT)

    def fir_filter(x, taps, *, padding="SAME", method="auto", **options):
        return _fir_filter(direct, F, limit, x, taps, padding, method, options)

    fir_filter.__doc__ = direct.__doc__
    return fir_filter


def _fir_filter(direct, F, limit, x, taps, padding, method, options):
    """Fir_filter's body: the op itself (`direct`), or for long filters the FFT route over F."""
    k = _fft.taps_length(taps) or 0
    if method == "direct" or (method == "auto" and not _prefers_fft(F, x, k, padding)):
        return direct(x, taps, padding=padding, **options)
    _fft.check_method(method)
    found = _fft.operands(F, x, taps, limit)
    if found is None or padding not in ("SAME", "VALID"):
        return direct(x, taps, padding=padding, **options)
    x, taps, restore = found
    return restore(F.compiled(_fft.fir_filter, padding)(x, taps))


def _prefers_fft(F, x, k, padding):
    """Whether "auto" takes the FFT route, from the shapes alone."""
    shape = _fft.static_shape(x)
    if k < _fft.SHORT_TAPS or shape is None or padding not in ("SAME", "VALID"):
        return False
    return _fft_is_cheaper(shape, k, padding, _fft.device_of(F, x))


# A pure function of a call's shape, taps, padding and device: kept, as a call site's repeat.
@shape_cache(maxsize=1024)
def _fft_is_cheaper(shape: tuple, k: int, padding: str, device: str) -> bool:
    rows, n = math.prod(shape[:-1]), shape[-1]
    outputs = n if padding == "SAME" else max(n - k + 1, 0)
    work = _fft.fft_work(rows, 1, 1, k, outputs, device)
    return _fft.fft_is_cheaper(device, rows * outputs, k, work)


FUNCTIONS = {"fir_filter": _make_fir_filter}
