# SPDX-License-Identifier: Apache-2.0
"""Independent references for the tests: NumPy, evaluated the way the op's formula says."""

import math

import numpy as np


def frobulate_reference(data, table):
    """Left-to-right sums in data's dtype, one NumPy pass per table entry."""
    data = np.asarray(data)
    out = data.copy()
    for entry in np.asarray(table):
        out = (out + data.dtype.type(entry)).astype(data.dtype)
    return out


def frobulate_float64(data, table):
    """The exact sum in float64, for a closeness check independent of rounding order."""
    return np.asarray(data, dtype=np.float64) + float(np.sum(np.asarray(table, dtype=np.float64)))


def random_case(rng, shape, dtype, table_size):
    data = (rng.standard_normal(shape) * 100).astype(dtype)
    table = rng.integers(-1000, 1000, size=table_size, dtype=np.int32)
    return data, table


def special_values(dtype):
    """NaN of both signs and with a payload, infinities, signed zeros, extremes and subnormals."""
    info = np.finfo(dtype)
    payload_nan = (
        np.array([0x7FC01234], np.uint32).view(np.float32)[0]
        if dtype == np.float32
        else np.array([0xFFF8000000ABCDEF], np.uint64).view(np.float64)[0]
    )
    return np.array(
        [
            np.nan,
            -np.nan,
            payload_nan,
            np.inf,
            -np.inf,
            0.0,
            -0.0,
            info.max,
            info.min,
            info.tiny,
            info.tiny / 4,
            -info.tiny / 4,
            info.smallest_subnormal,
            -info.smallest_subnormal,
            1.0,
            -1.0,
        ],
        dtype=dtype,
    )


def _round_to(exact, dtype):
    """The value of `dtype` nearest to the rational `exact`, ties to even (IEEE rounding)."""
    from fractions import Fraction

    dtype = np.dtype(dtype)
    info = np.finfo(dtype)
    big = Fraction(float(info.max)) + Fraction(float(info.max)) / (2 ** (info.nmant + 2))
    if abs(exact) >= big:  # beyond max by half an ulp or more: overflow
        return dtype.type(np.inf if exact > 0 else -np.inf)
    guess = dtype.type(float(exact)) if abs(exact) < Fraction(float(info.max)) else info.max
    guess = dtype.type(np.copysign(guess, float(exact))) if exact != 0 else guess
    candidates = [guess, np.nextafter(guess, dtype.type(np.inf)), np.nextafter(guess, -np.inf)]
    candidates = [c for c in candidates if np.isfinite(c)]

    def key(c):
        bits = np.array([c]).view(np.uint32 if dtype == np.float32 else np.uint64)[0]
        return (abs(Fraction(float(c)) - exact), int(bits) & 1)

    return dtype.type(min(candidates, key=key))


def fma_exact(a, b, c, dtype):
    """fma(a, b, c) in `dtype` with one rounding, through exact rational arithmetic (subnormals
    kept, as every constmem CPU kernel keeps them)."""
    from fractions import Fraction

    a, b, c = (float(v) for v in (a, b, c))
    if not all(np.isfinite(v) for v in (a, b, c)):
        # A finite product is exact inside an fma (it cannot overflow), so an infinite addend wins;
        # an infinite factor makes the product infinite (or NaN times zero), added as usual.
        if np.isfinite(a) and np.isfinite(b):
            return dtype(c)
        return dtype(a * b + c)
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:
        # Fractions have no signed zero. IEEE 754: a sum of two zeros is -0 only when both are
        # -0; an exact cancellation of nonzero values is +0 (rounding to nearest).
        product_negative = math.copysign(1.0, a) * math.copysign(1.0, b) < 0
        both_zero = (a == 0 or b == 0) and c == 0
        negative = both_zero and product_negative and math.copysign(1.0, c) < 0
        return dtype(-0.0 if negative else 0.0)
    return _round_to(exact, dtype)


def polyval_fma_reference(coeffs, x):
    """Horner's rule with one rounding per step, in x's dtype: y = fma(y, x, c), exactly."""
    x = np.asarray(x)
    coeffs = np.asarray(coeffs, dtype=x.dtype)
    out = np.empty_like(x)
    flat_x, flat_out = x.reshape(-1), out.reshape(-1)
    for i, value in enumerate(flat_x):
        y = coeffs[0]
        for c in coeffs[1:]:
            y = fma_exact(y, value, c, x.dtype.type)
        flat_out[i] = y
    return out


def polyval_coefficient_gradient(count, x, grad):
    """d(sum(grad * polyval(coeffs, x))) / d coeffs for `count` coefficients, in float64, and the
    magnitudes sum(|grad| * |x|**k) that bound each entry's rounding error."""
    x, grad = np.asarray(x, np.float64).ravel(), np.asarray(grad, np.float64).ravel()
    return np.vander(x, count).T @ grad, np.vander(np.abs(x), count).T @ np.abs(grad)


def polyval_error_bound(coeffs, x):
    """A bound on |computed - exact| for Horner's rule in x's dtype (Higham, eq. 5.3, doubled)."""
    x = np.asarray(x)
    n = len(coeffs)
    eps = np.finfo(x.dtype).eps
    magnitude = np.polyval(np.abs(np.asarray(coeffs, np.float64)), np.abs(x.astype(np.float64)))
    return 2 * (2 * n + 1) * eps * magnitude + np.finfo(x.dtype).tiny


def fir_fma_reference(x, taps, padding):
    """The filter by its definition, exactly: y = fma(xp[i + j], taps[j], y) from +0."""
    x = np.asarray(x)
    taps = np.asarray(taps, dtype=x.dtype)
    k, n = len(taps), x.shape[-1]
    pad_left = (k - 1) // 2 if padding == "SAME" else 0
    m = n if padding == "SAME" else max(n - k + 1, 0)
    rows = x.reshape(int(np.prod(x.shape[:-1])), n)
    out = np.zeros((rows.shape[0], m), x.dtype)
    for r, row in enumerate(rows):
        for i in range(m):
            y = x.dtype.type(0)
            for j, tap in enumerate(taps):
                s = i + j - pad_left
                y = fma_exact(row[s] if 0 <= s < n else 0.0, tap, y, x.dtype.type)
            out[r, i] = y
    return out.reshape((*x.shape[:-1], m))


def fir_float64(x, taps, padding):
    """np.correlate row by row in float64, with TensorFlow's SAME padding."""
    x = np.asarray(x, np.float64)
    taps = np.asarray(taps, np.float64)
    k, n = len(taps), x.shape[-1]
    rows = x.reshape(int(np.prod(x.shape[:-1])), n)
    if padding == "SAME":
        pad_left = (k - 1) // 2
        rows = np.pad(rows, [(0, 0), (pad_left, k - 1 - pad_left)])
    m = rows.shape[1] - k + 1 if rows.shape[1] >= k else 0
    out = np.zeros((rows.shape[0], m))
    for r, row in enumerate(rows):
        if m:
            out[r] = np.correlate(row, taps, "valid")[:m]
    return out.reshape((*x.shape[:-1], m))


def interpolate_fma_reference(x, knots, lo, hi):
    """Interpolate by its definition in x's dtype: t = (x - lo) * scale, i = floor(t), then
    fma(t - i, knots[i+1] - knots[i], knots[i]) exactly; the ends clamp, NaN stays NaN."""
    x = np.asarray(x)
    dtype = x.dtype.type
    knots = np.asarray(knots, dtype=x.dtype)
    last = len(knots) - 1
    low, high = dtype(lo), dtype(hi)
    scale = dtype(last) / (high - low)
    out = np.empty_like(x)
    flat_x, flat_out = x.reshape(-1), out.reshape(-1)
    for k, value in enumerate(flat_x):
        t = (value - low) * scale
        if t >= last:
            flat_out[k] = knots[last]
        elif t <= 0:
            flat_out[k] = knots[0]
        elif np.isnan(t):
            flat_out[k] = t
        else:
            i = int(t)
            below = knots[i]
            flat_out[k] = fma_exact(t - dtype(i), knots[i + 1] - below, below, dtype)
    return out


def interpolate_float64(x, knots, lo, hi):
    """np.interp over the knots' points in float64, with lo and hi in x's dtype."""
    x = np.asarray(x)
    points = np.linspace(float(x.dtype.type(lo)), float(x.dtype.type(hi)), len(knots))
    return np.interp(x.astype(np.float64), points, np.asarray(knots, np.float64))


def upfirdn_fma_reference(x, taps, up, down):
    """Upfirdn by its polyphase definition, exactly: output i at t = i * down of the upsampled
    row, phase p = t % up, base b = t // up; y = fma(row[b - m], taps[p + m * up], y) from +0 over
    the m inside the row and the taps, ascending (upfirdn_functor.h)."""
    x = np.asarray(x)
    taps = np.asarray(taps, dtype=x.dtype)
    k, n = len(taps), x.shape[-1]
    outputs = ((n - 1) * up + k - 1) // down + 1
    rows = x.reshape(-1, n)
    out = np.zeros((rows.shape[0], outputs), x.dtype)
    for r, row in enumerate(rows):
        for i in range(outputs):
            p, b = (i * down) % up, (i * down) // up
            y = x.dtype.type(0)
            for m in range(max(b - n + 1, 0), min(b, (k - 1 - p) // up) + 1 if p < k else 0):
                y = fma_exact(row[b - m], taps[p + m * up], y, x.dtype.type)
            out[r, i] = y
    return out.reshape((*x.shape[:-1], outputs))


def torchaudio_resample_float64(x, orig_freq, new_freq, width=6, rolloff=0.99, kaiser=False):
    """torchaudio.functional.resample by its definition, in float64 NumPy: the windowed-sinc
    kernels of each of the `new` phases over 2 w + orig padded samples, a strided correlation,
    the output cropped to ceil(n * new / orig)."""
    g = math.gcd(orig_freq, new_freq)
    orig, new = orig_freq // g, new_freq // g
    base = min(orig, new) * rolloff
    w = math.ceil(width * orig / base)
    t = (np.arange(new)[:, None] * -1.0 / new + np.arange(-w, w + orig)[None, :] / orig) * base
    t = np.clip(t, -width, width)
    if kaiser:
        beta = 14.769656459379492
        window = np.i0(beta * np.sqrt(1 - (t / width) ** 2)) / np.i0(beta)
    else:
        window = np.cos(t * math.pi / width / 2) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        kernels = np.where(t == 0, 1.0, np.sin(t * math.pi) / (t * math.pi))
    kernels = kernels * window * base / orig
    x = np.asarray(x, np.float64)
    n = x.shape[-1]
    padded = np.pad(x.reshape(-1, n), [(0, 0), (w, w + orig)])
    frames = n // orig + 1
    out = np.stack(
        [padded[:, j * orig : j * orig + 2 * w + orig] @ kernels.T for j in range(frames)]
    )
    out = out.transpose(1, 0, 2).reshape(padded.shape[0], frames * new)[:, : -(-n * new // orig)]
    return out.reshape((*x.shape[:-1], out.shape[-1]))
