# SPDX-License-Identifier: Apache-2.0
"""Upfirdn in Python: signature, output shape, gradient, Keras layer and resamplers.

For every framework; the resamplers (resample_poly, resample) are built on the op. The op's C++
description (upfirdn_op.h) gives its names, table and attributes; this file what the Python
packages add to them (constmem.ops). Imports no framework: the resamplers design their filters
with NumPy and call the op of the framework module they are given.
"""

from __future__ import annotations

import functools
import math
import numbers
import operator
import sys

import numpy as np
from constmem.ops import BATCH, WHOLE, Axes, _fft
from constmem.ops._functions import (
    REQUIRED,
    WIDENED_DTYPES,
    Required,
    argument,
    shape_cache,
    signature,
    torch_compiling,
    widened,
)

# The name of the module constant that holds the most entries the table takes.
LIMIT = "MAX_UPFIRDN_TAPS"
SIGNATURE = ("x", "taps")
DEFAULTS = {"up": 1, "down": 1}
MAX_RATE = 2**31 - 1  # up and down: 1 to 2^31 - 1 (kUpfirdnMaxRate, upfirdn_functor.h)
MAX_TAPS = 2**20  # the op's taps: 1 to 2^20 (kUpfirdnMaxTaps, the core's kMaxTableEntries)
DOC = """Upsamples, filters and downsamples every row of `x` (its last axis): scipy.signal.upfirdn.

`upfirdn(x, taps, up=up, down=down)` is `scipy.signal.upfirdn(taps, x, up, down)` along the last
axis: `up - 1` zeros are inserted after each sample, the result is convolved with the taps (a
convolution, not a correlation) and every `down`-th sample is kept from the first, so that the last
dimension becomes `((n - 1) * up + k - 1) // down + 1`. Computed polyphase: output `i` takes the
taps `p, p + up, ...` of its phase `p = (i * down) % up` against the samples before it, one fused
multiply-add each from +0, nearest sample first; terms outside the row are skipped. The CPU and
GPU kernels run the same operations in the same order and agree bit for bit. On a GPU a small host
table travels as a by-value kernel parameter; other taps are staged in each block's shared memory
where they fit (64 KiB), else read from global memory.

Args:
  x: float32, float64, float16 or bfloat16 (computed in float32, each output rounded once to
    x's dtype) of rank 1 or more; every leading dimension is a batch.
  taps: 1 to 1,048,576 (2^20) taps: a tensor of x's compute dtype (x's own; float32 for float16
    and bfloat16 x), or a Python or NumPy sequence (fixed per call site, rounded to it).
  up: the upsampling factor, 1 to 2,147,483,647 (2^31 - 1).
  down: the downsampling factor, 1 to 2,147,483,647.
  method: "direct" (the polyphase kernel above: bit for bit the same on every device and in
    every framework), "fft" (the same polyphase sums as FFT convolutions at the kept rate,
    overlap-save, on the framework's own FFT, within a few units of rounding of the exact result
    times log2 of its FFT size; static shapes), or "auto" (the default: "direct" below the
    measured crossover, "fft" above it).

Gradients flow to x (the adjoint: the reversed taps with up and down exchanged, by the op itself)
and to a tensor `taps` (a correlation of the upsampled rows with the zero-inserted gradient).
See also `resample_poly` (scipy.signal.resample_poly) and `resample`
(torchaudio.functional.resample), built on this op.
"""

# The Keras layer: `taps` trainable taps, a unit impulse at first (y is x upsampled with zeros,
# then decimated).
LAYER = {
    "name": "Upfirdn",
    "size": "taps",
    "size_to_entries": lambda taps: taps,
    "initial": lambda k, attrs: [1.0] + [0.0] * (k - 1),
    "weight": "taps",
    "variable": "kernel",
}


def check(attrs):
    """Up and down are 1 to 2^31 - 1 (the op checks the same, in every framework)."""
    for name in ("up", "down"):
        if not 1 <= attrs[name] <= MAX_RATE:
            raise ValueError(f"{name} must be 1 to {MAX_RATE}; got {attrs[name]}")


def output_length(n, k, up, down):
    """Scipy's output length ((n - 1) * up + k - 1) // down + 1 (negative: n = 0, few taps)."""
    return ((n - 1) * up + k - 1) // down + 1


def output_shape(shape, taps, attrs, maximum=max):
    """X's shape with the last dimension ((n - 1) * up + k - 1) // down + 1."""
    if len(shape) < 1:
        raise ValueError("x must have rank 1 or more (upfirdn runs along the last axis)")
    if shape[-1] is None or taps is None:
        return (*shape[:-1], None)
    length = output_length(shape[-1], taps, attrs["up"], attrs["down"])
    if isinstance(length, int):
        if length < 0:
            raise ValueError(
                f"Upfirdn: rows of 0 samples with {taps} taps, up {attrs['up']} and down "
                f"{attrs['down']} have a negative output length (scipy raises)"
            )
        return (*shape[:-1], length)
    return (*shape[:-1], maximum(length, 0))  # a symbolic size (torch.compile)


def axes(shape, taps, attrs):
    """Leading axes are rows; the last is read whole.

    Output i reads the samples t with 0 <= i * down - t * up < k, and the result's length is not
    the samples' times up / down, so that a shard's outputs are not those of its samples.
    """
    return Axes((*(BATCH,) * (len(shape) - 1), WHOLE), (None,))


def _ceil_div(a, b):
    return -(-a // b)


def _adjoint_chunks(k, up, limit):
    """[(start, count)] of the taps for the adjoint: starts multiples of up.

    Each chunk with its padding is within the op's limit (one chunk unless k is within up - 1 of
    the limit). Raises ValueError where no chunk of two taps fits (up of the limit or more).
    """
    if not isinstance(k, int):  # a table of unknown size (TensorFlow): one chunk
        return [(0, k)]
    if _ceil_div(k - 1, up) * up + 1 <= limit:
        return [(0, k)]
    per = ((limit - 1) // up) * up
    if per == 0:
        raise ValueError(
            f"upfirdn's gradient for x with {k} taps needs up / gcd(up, down) below {limit}; "
            f"got {up}"
        )
    return [(start, min(per, k - start)) for start in range(0, k, per)]


def backward(F, grad, x, taps, attrs, need_x, need_taps):
    """dx: upfirdn of the gradient (taps reversed, up and down exchanged); dtaps: a correlation.

    dtaps correlates the upsampled rows with the zero-inserted gradient.
    """
    up, down = attrs["up"], attrs["down"]
    k, n, m = F.length(taps), F.size(x, -1), F.size(grad, -1)
    grad_x = grad_taps = None
    if need_x:
        # y[i] = sum_t x[t] h[i * down - t * up] meets only the taps at multiples of c = gcd(up,
        # down): with h' = h[::c], P = up / c and Q = down / c, dx[t] = sum_i g[i] h'[i Q - t P]:
        # upfirdn(g, h'', up=Q, down=P)[t + a] with h''[q] = h'[a P - q], a = ceil((k' - 1) / P),
        # i.e. h' reversed after a P - (k' - 1) zeros. One zero after g makes that output long
        # enough whatever k. Taps too many for the padding run in chunks (starts multiples of P,
        # whose outputs are x delayed by start / P samples).
        common = math.gcd(up, down)
        period, stride = up // common, down // common
        kept = taps if common == 1 else taps[::common]
        kept_length = k if common == 1 else F.length(kept)
        padded_grad = F.pad_last(grad, 0, 1)
        chunks = _adjoint_chunks(kept_length, period, MAX_TAPS)
        for start, count in chunks:
            chunk = kept if len(chunks) == 1 else kept[start : start + count]
            a = (count - 1 + period - 1) // period
            reversed_taps = F.pad_last(F.flip(chunk), a * period - (count - 1), 0)
            full = F.op(padded_grad, reversed_taps, up=stride, down=period)
            offset = a + start // period
            part = full[..., offset : offset + n]
            grad_x = part if grad_x is None else grad_x + part
    if need_taps:
        if (isinstance(n, int) and n == 0) or (isinstance(m, int) and m == 0):
            grad_taps = F.zeros(k, like=taps)
        else:
            # dtaps[j] = sum_i g[i] xup[i * down - j] = sum_u xup[u] gz[u + j], xup the rows with
            # up - 1 zeros after each sample ((n-1) up + 1 long), gz the gradient with down - 1
            # (padded to (n-1) up + k): both zero-inserted by the op with the one tap [1].
            one = F.cast([1.0], taps)
            upsampled = F.op(x, one, up=up, down=1)
            inserted = F.op(grad, one, up=down, down=1)
            padded = F.pad_last(inserted, 0, (n - 1) * up + k - (m - 1) * down - 1)
            grad_taps = F.correlate_rows(padded, upsampled)
    return grad_x, grad_taps


# The resamplers. Their filters are designed once per set of arguments in float64 NumPy, cached,
# and passed to the op as static tables (fixed per call site, uploaded once per device). Under
# torch.compile the design is a constant of the graph.


def _constant_result(fn):
    """Fn, which torch.compile calls when it traces (its result a constant), where torch is loaded.

    NumPy code would otherwise be traced into tensors.
    """
    torch = sys.modules.get("torch")
    mark = getattr(getattr(torch, "compiler", None), "assume_constant_result", None)
    if mark is None:
        return fn

    def constant(*args):
        return fn(*args)

    return mark(constant)


def _concrete(value):
    """A rate or filter setting as a plain Python number, whatever traces the call.

    Under torch.compile a number that changed between calls arrives symbolic, and the filter's
    design (NumPy) needs its value: operator.index and float.hex make the compiler specialise on
    it, guarding the graph on the value (a new rate traces anew, its filter a constant of the
    graph). Anything else is returned as it is, for the checks to name.
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return operator.index(value)
    if isinstance(value, float):
        return float.fromhex(value.hex())
    return value


def _is_float64(x):
    return "float64" in str(getattr(x, "dtype", "float32"))


def _general_cosine(count, coefficients):
    fac = np.linspace(-np.pi, np.pi, count)
    window = np.zeros(count)
    for k, a in enumerate(coefficients):
        window += a * np.cos(k * fac)
    return window


def _window(window, count):
    """scipy.signal.get_window(window, count, fftbins=False), for the windows taken here.

    ("kaiser", beta), "hann", "hamming", "blackman", "boxcar".
    """
    name, args = (window[0], tuple(window[1:])) if isinstance(window, tuple) else (window, ())
    if count == 1:
        return np.ones(1)
    if name in ("kaiser", "ksr") and len(args) == 1:
        beta = float(args[0])
        n = np.arange(0, count)
        alpha = (count - 1) / 2.0
        return np.i0(beta * np.sqrt(1 - ((n - alpha) / alpha) ** 2.0)) / np.i0(beta)
    if not args and name in ("hann", "hanning", "han"):
        return _general_cosine(count, [0.5, 0.5])
    if not args and name in ("hamming", "hamm", "ham"):
        return _general_cosine(count, [0.54, 1.0 - 0.54])
    if not args and name in ("blackman", "black", "blk"):
        return _general_cosine(count, [0.42, 0.50, 0.08])
    if not args and name in ("boxcar", "box", "ones", "rect", "rectangular"):
        return np.ones(count)
    raise ValueError(
        "window must be ('kaiser', beta), 'hann', 'hamming', 'blackman', 'boxcar' or the filter's "
        f"coefficients; got {window!r}"
    )


def firwin_lowpass(count, cutoff, window):
    """scipy.signal.firwin(count, cutoff, window=window): a windowed sinc, unit gain at DC."""
    alpha = 0.5 * (count - 1)
    m = np.arange(0, count) - alpha
    h = cutoff * np.sinc(cutoff * m)
    h = h * _window(window, count)
    return h / np.sum(h)


@functools.lru_cache(maxsize=64)
def _poly_design(up, down, window, float64, phase):
    """(taps, first) of scipy.signal.resample_poly for rows of n samples.

    phase = (n * up) % down, all its padding depends on. Upfirdn with `taps` (values of the data's
    dtype, as float64), then outputs [first, first + ceil(n * up / down)).
    """
    if isinstance(window, tuple) and window and not isinstance(window[0], str):
        window = np.asarray(window, np.float64)
    if isinstance(window, np.ndarray):
        if window.ndim != 1:
            raise ValueError("window must be 1-D")
        half_len = (window.shape[0] - 1) // 2
        h = window.copy()
    else:
        max_rate = max(up, down)
        half_len = 10 * max_rate
        _check_taps(2 * half_len + 1, f"resample_poly by {up}/{down} (after their gcd)")
        h = firwin_lowpass(2 * half_len + 1, 1.0 / max_rate, window)
    # Scipy rounds the filter to x's dtype, then scales it in that dtype.
    h = (h if float64 else h.astype(np.float32)) * (np.float64(up) if float64 else np.float32(up))
    n_pre_pad = down - half_len % down
    n_post_pad = 0
    n_pre_remove = (half_len + n_pre_pad) // down
    # Scipy's loop: output_len(k, n) < n_out + n_pre_remove, written with n * up = q * down +
    # phase, whose q cancels.
    while (phase - up + h.shape[0] + n_pre_pad + n_post_pad - 1) // down + 1 < (
        phase > 0
    ) + n_pre_remove:
        n_post_pad += 1
    taps = np.concatenate([np.zeros(n_pre_pad), h.astype(np.float64), np.zeros(n_post_pad)])
    _check_taps(taps.shape[0], f"resample_poly by {up}/{down} (after their gcd)")
    return tuple(taps.tolist()), n_pre_remove


def _check_taps(count, what):
    """Raises ValueError where a resampler's filter has more taps than the op takes."""
    if count > MAX_TAPS:
        raise ValueError(f"{what} needs {count} taps; upfirdn takes at most {MAX_TAPS}")


def _upfirdn_static(ops, x, taps, up, down, method):
    """ops.upfirdn(x, taps, up=up, down=down, method=method) with the static table `taps`.

    In JAX through one jax.jit per table and rates (compiled once per shape, inlined under an
    outer jit): an eager JAX call lowers and compiles a static table anew each time (a third of a
    second for 100,000 taps).
    """
    if getattr(ops, "__name__", None) == "constmem.jax":
        return _jax_upfirdn(ops, taps, up, down, method)(x)
    return ops.upfirdn(x, taps, up=up, down=down, method=method)


@functools.lru_cache(maxsize=64)
def _jax_upfirdn(ops, taps, up, down, method):
    jax = sys.modules["jax"]
    return jax.jit(lambda x: ops.upfirdn(x, taps, up=up, down=down, method=method))


# The resamplers' data beyond the op's dtypes: resampled in float32, returned in its own dtype.
DATA_DTYPES = ("float32", "float64", *WIDENED_DTYPES)


def _static_length(x, name):
    n = x.shape[-1]
    if n is None:
        raise ValueError(f"{name} needs x's last dimension known when traced")
    return n


def _check_rank(x, name):
    """Refuses data of rank 0, which has no axis to resample, by the name the user gave it."""
    shape = getattr(x, "shape", None)
    if shape is not None and len(shape) == 0:
        raise ValueError(f"{name} must have rank 1 or more (..., time); got rank 0 (a scalar)")


def _rate(value, name):
    """A rate as a positive int: a Python or NumPy integer, or a float of an integer value.

    TypeError for what is not a real number (a str, a bool), ValueError for a value that is not
    a positive integer (0, -1, 1.5, inf, NaN); each names the argument and shows the value.
    """
    value = _real(value, name)
    if not (math.isfinite(value) and value > 0 and int(value) == value):
        raise ValueError(f"{name} must be a positive integer rate; got {value!r}")
    return int(value)


def _real(value, name):
    """A real number argument as it is (made concrete under torch.compile); TypeError else."""
    value = _concrete(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number; got {value!r} ({type(value).__name__})")
    return value


def _make_resample_poly(ops):
    design = _constant_result(_poly_design)

    def resample_poly(x, up, down, window=("kaiser", 5.0), padtype="constant", *, method="auto"):
        """Resamples every row of `x` (its last axis) by up / down: scipy.signal.resample_poly.

        Computes what `scipy.signal.resample_poly(x, up, down, axis=-1, window=window)` computes:
        after reducing up / down by their gcd, the filter firwin(2 * half_len + 1, 1 / max(up,
        down), window) * up (half_len = 10 * max(up, down)), designed in NumPy in float64, rounded
        to x's dtype and scaled in it as scipy does; zero-padded as scipy pads it, run by
        `upfirdn` as a static table, and the output cropped to ceil(n * up / down) samples.

        Args:
          x: float32 or float64 of rank 1 or more, its last dimension known; float16 and
            bfloat16 are resampled in float32 in the same pass and returned in their own dtype.
          up: a positive integer. After the gcd with down, the filter's taps (about 21 * max(up,
            down) for the default filter) are within the op's 1,048,576 (2^20): rates up to
            about 50,000.
          down: likewise.
          window: ("kaiser", beta), "hann", "hamming", "blackman", "boxcar", or the filter's
            coefficients (a list or 1-D NumPy array, used as scipy uses them).
          padtype: "constant" (zeros beyond the edges, scipy's default); the others scipy takes
            are not supported.
          method: upfirdn's: "direct", "fft" or "auto" (the FFT route for long filters).

        Gradients flow to x (the op's adjoint).

        """
        return _resample_poly(ops, design, x, up, down, window, padtype, method)

    return resample_poly


def _resample_poly(ops, design, x, up, down, window, padtype, method):
    """Resample_poly's body: the filter by `design` (_poly_design), run by ops.upfirdn."""
    if padtype != "constant":
        raise ValueError(f"padtype must be 'constant' (zeros); got {padtype!r}")
    up, down = _rate(up, "up"), _rate(down, "down")
    if isinstance(window, tuple):
        window = tuple(_concrete(v) for v in window)
    _check_rank(x, "x")
    g = math.gcd(up, down)
    up, down = up // g, down // g
    if up == down == 1:
        return x[..., :]
    if isinstance(window, (list, np.ndarray)):
        window = tuple(float(v) for v in np.asarray(window, np.float64).reshape(-1))
    x, restore = widened(x, "x", DATA_DTYPES, ops.OPS["upfirdn"].data_dtypes())
    n = _static_length(x, "resample_poly")
    taps, first = design(up, down, window, _is_float64(x), int((n * up) % down))
    y = _upfirdn_static(ops, x, taps, up, down, _fft.check_method(method))
    return restore(y[..., first : first + _ceil_div(n * up, down)])


KAISER_BETA = 14.769656459379492  # torchaudio's default for sinc_interp_kaiser


@functools.lru_cache(maxsize=64)
def _sinc_design(orig, new, width_zeros, rolloff, method, beta):
    """(taps, first) of torchaudio.functional.resample from orig to new (reduced).

    Upfirdn with up = new, down = orig, then outputs [first, first + ceil(n * new / orig)).

    Torchaudio's kernel[i, m] (phase i of new, m of 2 w + orig samples) is a sample of one
    windowed sinc at r = i * orig - (m - w) * new on the grid of 1 / (orig * new); each r is one
    (i, m), orig and new being coprime. Evaluated here at every r the window reaches, as
    torchaudio evaluates kernel[i, m] (in float64), placed at r; the entries whose argument
    torchaudio clamps (the window's edge, about 1e-33 of the peak for Hann) are left out. The
    work is the filter's taps, not torchaudio's new * (2 w + orig) kernel entries.
    """
    base = min(orig, new) * rolloff
    w = math.ceil(width_zeros * orig / base)
    what = (
        f"resample from {orig} to {new} (after their gcd) with lowpass_filter_width "
        f"{width_zeros} and rolloff {rolloff}"
    )
    # |t| <= width_zeros where |r| <= width_zeros * orig * new / base (two more for rounding), and
    # every r up to there is inside: the filter has about 2 * reach taps.
    reach = math.floor(width_zeros * orig * new / base) + 2
    if reach > MAX_TAPS:
        raise ValueError(f"{what} needs about {2 * reach} taps; upfirdn takes at most {MAX_TAPS}")
    r = np.arange(-reach, reach + 1, dtype=np.int64)
    i = (r * pow(orig, -1, new)) % new if new > 1 else np.zeros_like(r)
    m = w + (i * orig - r) // new
    on_grid = (m >= 0) & (m < 2 * w + orig)
    r, i, m = r[on_grid], i[on_grid], m[on_grid]
    # Torchaudio's t[i, m] = (-i / new + (m - w) / orig) * base.
    t = (-i.astype(np.float64) / new + (m - w).astype(np.float64) / orig) * base
    inside = np.abs(t) <= width_zeros
    r, t = r[inside], t[inside]
    if method == "sinc_interp_hann":
        window = np.cos(t * math.pi / width_zeros / 2) ** 2
    else:
        b = KAISER_BETA if beta is None else float(beta)
        window = np.i0(b * np.sqrt(1 - (t / width_zeros) ** 2)) / np.i0(np.float64(b))
    t = t * math.pi
    scale = base / orig
    with np.errstate(divide="ignore", invalid="ignore"):
        kernels = np.where(t == 0, 1.0, np.sin(t) / t)
    kernels = kernels * (window * scale)
    lo, hi = int(r.min()), int(r.max())
    z = _ceil_div(-lo, orig) * orig if lo < 0 else 0
    length = z + max(hi, new - 1) + 1  # r up to new - 1 at least: outputs enough for the crop
    _check_taps(length, what)
    taps = np.zeros(length)
    taps[r + z] = kernels
    return tuple(taps.tolist()), z // orig


# The settings' types whose checked plans resample keeps (a tensor or an array could change).
_IMMUTABLE_TYPES = frozenset((int, float, str, type(None)))
_PLANS_SIZE = 256
_UNPLANNED = object()


def _resample_plan(design, orig_freq, new_freq, lowpass_filter_width, rolloff, method, beta):
    """Resample's settings checked: (new, orig, taps, first), or None for the same rate.

    Each refusal names the argument and shows its value: TypeError for a wrong type, ValueError
    for a bad value.
    """
    for required, value in (("orig_freq", orig_freq), ("new_freq", new_freq)):
        if isinstance(value, Required):
            raise TypeError(f"resample() missing required argument: {required!r}")
    orig_freq, new_freq = _rate(orig_freq, "orig_freq"), _rate(new_freq, "new_freq")
    lowpass_filter_width = _real(lowpass_filter_width, "lowpass_filter_width")
    rolloff = _real(rolloff, "rolloff")
    beta = None if beta is None else _real(beta, "beta")
    if method not in ("sinc_interp_hann", "sinc_interp_kaiser"):
        raise ValueError(
            f"resampling_method must be 'sinc_interp_hann' or 'sinc_interp_kaiser'; got {method!r}"
        )
    if not (math.isfinite(lowpass_filter_width) and lowpass_filter_width > 0):
        raise ValueError(
            f"lowpass_filter_width must be positive and finite; got {lowpass_filter_width}"
        )
    if not (math.isfinite(rolloff) and 0 < rolloff <= 1):
        raise ValueError(f"rolloff must be in (0, 1]; got {rolloff}")
    if orig_freq == new_freq:
        return None
    g = math.gcd(orig_freq, new_freq)
    orig, new = orig_freq // g, new_freq // g
    taps, first = design(orig, new, lowpass_filter_width, float(rolloff), method, beta)
    return new, orig, taps, first


def _make_resample(ops):
    design = _constant_result(_sinc_design)
    plans = {}

    def resample(
        x=REQUIRED,
        orig_freq=REQUIRED,
        new_freq=REQUIRED,
        lowpass_filter_width=6,
        rolloff=0.99,
        resampling_method="sinc_interp_hann",
        beta=None,
        *,
        waveform=REQUIRED,
        method="auto",
    ):
        """Resamples every row of `x` (its last axis): torchaudio.functional.resample.

        Torchaudio's kernels are samples of one windowed sinc on the grid of 1 / (orig * new)
        (after the gcd), so its strided convolution is `upfirdn(x, h, up=new, down=orig)` with an
        offset and a crop to ceil(n * new / orig) samples. The filter is designed in NumPy in
        float64 (torchaudio designs it in x's dtype) and passed as a static table: the same values
        as torchaudio within float32 rounding. The window's clamped edge entries (relative size
        below 1e-20) are left out. Torchaudio's name `waveform` is taken for `x` too.

        Args:
          x: float32 or float64 of rank 1 or more; float16 and bfloat16 are resampled in float32
            and returned in their own dtype.
          orig_freq: a positive integer rate. After the gcd with new_freq, the filter (about
            2 * lowpass_filter_width * max(orig, new) / rolloff taps) is within the op's
            1,048,576 (2^20).
          new_freq: likewise.
          lowpass_filter_width: as torchaudio's (zero crossings on each side), positive.
          rolloff: as torchaudio's (the cutoff as a fraction of the lower Nyquist frequency), in
            (0, 1].
          resampling_method: "sinc_interp_hann" or "sinc_interp_kaiser".
          beta: the Kaiser window's beta (torchaudio's default 14.77 where None).
          waveform: torchaudio's name for `x` (one of the two is given).
          method: upfirdn's: "direct", "fft" or "auto" (the FFT route for long filters).

        Gradients flow to x (the op's adjoint).

        """
        return _resample(
            ops,
            design,
            plans,
            x,
            orig_freq,
            new_freq,
            lowpass_filter_width,
            rolloff,
            resampling_method,
            beta,
            waveform,
            method,
        )

    resample.__signature__ = signature(resample)
    return resample


def _resample(
    ops,
    design,
    plans,
    x,
    orig_freq,
    new_freq,
    lowpass_filter_width,
    rolloff,
    resampling_method,
    beta,
    waveform,
    method,
):
    """Resample's body: the filter by `design` (_sinc_design), `plans` a call site's settings."""
    if isinstance(waveform, Required):
        name = "x"
        if isinstance(x, Required):
            raise TypeError("resample() missing required argument: 'x'")
    else:
        name, x = argument("resample", [("x", x), ("waveform", waveform)])
    settings = (orig_freq, new_freq, lowpass_filter_width, rolloff, resampling_method, beta)
    # A call site's settings again (values and types): checked and designed once.
    types = tuple(map(type, settings))
    key = None if torch_compiling() else (*settings, *types)
    try:
        plan = _UNPLANNED if key is None else plans.get(key, _UNPLANNED)
    except TypeError:  # an unhashable setting: the checks name it
        plan, key = _UNPLANNED, None
    if plan is _UNPLANNED:
        plan = _resample_plan(design, *settings)
        if key is not None and _IMMUTABLE_TYPES.issuperset(types):
            if len(plans) >= _PLANS_SIZE:
                plans.clear()
            plans[key] = plan
    _check_rank(x, name)
    if plan is None:  # the same rate
        return x
    new, orig, taps, first = plan
    x, restore = widened(x, name, DATA_DTYPES, ops.OPS["upfirdn"].data_dtypes())
    n = _static_length(x, "resample")
    y = _upfirdn_static(ops, x, taps, new, orig, _fft.check_method(method))
    return restore(y[..., first : first + _ceil_div(new * n, orig)])


def _make_upfirdn(ops):
    """The op's function with `method`: the direct kernel, or the FFT route for long filters."""
    direct = ops.upfirdn  # the op itself, which this function then replaces in `ops`
    F = ops._arrays("upfirdn")

    def upfirdn(x, taps, *, up=1, down=1, method="auto", **options):
        return _upfirdn(direct, F, x, taps, up, down, method, options)

    upfirdn.__doc__ = direct.__doc__
    return upfirdn


def _upfirdn(direct, F, x, taps, up, down, method, options):
    """Upfirdn's body: the op itself (`direct`), or for long filters the FFT route over F."""
    count = _fft.taps_length(taps) or 0
    if method == "direct" or (method == "auto" and not _prefers_fft(F, x, count, up, down)):
        return direct(x, taps, up=up, down=down, **options)
    _fft.check_method(method)
    found = _fft.operands(F, x, taps, MAX_TAPS)
    if (
        found is None
        or any(type(r) is not int or not 1 <= r <= MAX_RATE for r in (up, down))
        or output_length(found[0].shape[-1], count, up, down) < 0
    ):
        return direct(x, taps, up=up, down=down, **options)
    x, taps, restore = found
    outputs = output_length(x.shape[-1], count, up, down)
    return restore(F.compiled(_fft.upfirdn, up, down, outputs)(x, taps))


def _prefers_fft(F, x, count, up, down):
    """Whether "auto" takes the FFT route, from the shapes and rates alone."""
    if count < _fft.SHORT_TAPS * (up if type(up) is int and up > 0 else 1):
        return False
    shape = _fft.static_shape(x)
    if shape is None or any(type(r) is not int or not 1 <= r <= MAX_RATE for r in (up, down)):
        return False
    return _fft_is_cheaper(shape, count, up, down, _fft.device_of(F, x))


# A pure function of a call's shape, rates and device: kept, as a call site's repeat.
@shape_cache(maxsize=1024)
def _fft_is_cheaper(shape: tuple, count: int, up: int, down: int, device: str) -> bool:
    outputs = output_length(shape[-1], count, up, down)
    if outputs <= 0:
        return False
    rows = math.prod(shape[:-1])
    common = math.gcd(up, down)
    phases, stride = up // common, down // common
    extent = (count - 1 + (stride - 1) * up) // (up * stride) + 1
    work = _fft.fft_work(rows, phases, stride, extent, -(-outputs // phases), device)
    return _fft.fft_is_cheaper(device, rows * outputs, _ceil_div(count, up), work)


FUNCTIONS = {
    "upfirdn": _make_upfirdn,
    "resample_poly": _make_resample_poly,
    "resample": _make_resample,
}
