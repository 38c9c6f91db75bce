# SPDX-License-Identifier: Apache-2.0
"""FFT convolution along the last axis, polyphase, over the array namespace F of any framework.

FirFilter's and Upfirdn's `method="fft"` (and "auto" above the crossover) run here, on the
framework's own FFT (cuFFT on a GPU, pocketfft or its equivalent on the CPU): overlap-save, so
that a long signal costs O(n log k) rather than O(n log n), with the rate change folded in
polyphase: only the outputs kept are computed. Gradients are the framework's own, through the
FFTs and gathers. Imports no framework.
"""

from __future__ import annotations

import math

import numpy as np

from constmem.ops._functions import cast, dtype_name, framework, shape_cache

METHODS = ("auto", "direct", "fft")
# Below this many taps an output the direct kernel is faster on every device measured: "auto"
# decides on the filter's length alone, at no cost a call.
SHORT_TAPS = 32
# What one butterfly of the FFT route costs in the direct kernel's multiply-adds, by device
# (bench/fft_crossover_bench.py measures it; docs/performance.md has the crossover it gives).
BUTTERFLY_COST = {"cpu": 12.0, "gpu": 61.0}
# What the FFT route costs whatever its size (its launches and copies: about ten operations of the
# framework against the direct kernel's one), in the direct kernel's multiply-adds at full speed
# (bench/fft_crossover_bench.py measures it on a short row).
ROUTE_COST = {"cpu": 5.0e6, "gpu": 5.0e8}
# The outputs the direct kernel computes side by side before a device is full: a thread (a lane
# of a CPU's vector) takes an output's taps one after another, so fewer outputs cost what this
# many do (an H100 holds about 270,000 threads; 2^20 taps into one output took the direct kernel
# 69 ms, the FFT route 0.75 ms).
PARALLEL_OUTPUTS = {"cpu": 64, "gpu": 1 << 17}


def check_method(method) -> str:
    """`method` if it is one of METHODS, else a ValueError naming it."""
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be one of {'/'.join(METHODS)}; got {method!r}")
    return method


def taps_length(taps):
    """The number of taps of a tensor or a sequence, or None where it has none to count."""
    shape = getattr(taps, "shape", None)
    if shape is not None:
        return shape[0] if len(shape) == 1 and isinstance(shape[0], int) else None
    try:
        return len(taps)
    except TypeError:
        return None


# Pure functions of a call's shape: kept, as a call site's shapes repeat call after call.
@shape_cache(maxsize=1024)
def fft_work(rows: int, phases: int, down: int, extent: int, length: int, device: str) -> float:
    """The FFT route's work in butterflies.

    Each input phase's frames forward and each output phase's back, and a complex multiply-add
    (about two butterflies) for each pair of phases at each frequency.
    """
    size = _fft_size(extent, length, device)
    frames = -(-length // (size - extent + 1))
    transforms = (down + phases) * size * math.log2(size) / 2
    products = phases * down * (size // 2 + 1) * 2
    return rows * frames * (transforms + products)


def static_shape(x):
    """X's shape where every dimension is a known int (rank 1 or more), else None."""
    shape = tuple(getattr(x, "shape", None) or ())
    for d in shape:  # a loop: this runs on every call that "auto" decides
        if not isinstance(d, int):
            return None
    return shape or None


def device_of(F, x) -> str:
    """The key of BUTTERFLY_COST: "gpu" for a tensor on a GPU (or traced for one), else "cpu"."""
    return "gpu" if framework(x) is not None and F.on_gpu(x) else "cpu"


def fft_is_cheaper(device: str, outputs: int, taps: int, work: float) -> bool:
    """Whether the FFT route's `work` costs less than the direct kernel's multiply-adds.

    The direct kernel computes `outputs` of `taps` multiply-adds each, at least
    PARALLEL_OUTPUTS[device] of them at a time; the route costs ROUTE_COST[device] beside its
    butterflies. Decided from the shapes before the operands are converted, so that a call the
    kernel takes converts nothing.
    """
    multiply_adds = max(outputs, PARALLEL_OUTPUTS[device]) * taps
    return multiply_adds > BUTTERFLY_COST[device] * work + ROUTE_COST[device]


# Frames of at least this many times the filter's extent (and _SMALLEST_FFT samples): a frame
# costs more than its butterflies (its copies, its launches), so that fewer, longer ones win
# until a frame holds the whole row.
_FRAME_FACTOR = 8
_SMALLEST_FFT = 4096
# On a CPU a frame past this many samples costs more a butterfly (it leaves the caches): longer
# filters take frames of twice their extent instead (at 262,144 taps on a Zen 3 core, frames of
# 2^19 samples took half the time of one frame of 2^20).
_CPU_FRAME_CAP = 1 << 17


@shape_cache(maxsize=1024)
def fast_length(n: int) -> int:
    """The least 2^a 3^b 5^c of at least n: sizes every framework's FFT runs at full speed."""
    best = 1 << max(n - 1, 0).bit_length()
    fives = 1
    while fives < best:
        threes = fives
        while threes < best:
            size = threes << max(0, (-(-n // threes) - 1).bit_length())
            best = min(best, size)
            threes *= 3
        fives *= 5
    return best


def _butterflies(size: int, frames: int) -> float:
    return frames * size * math.log2(size)


@shape_cache(maxsize=1024)
def _fft_size(extent: int, length: int, device: str) -> int:
    """The FFT size of overlap-save with filters of `extent` taps and `length` outputs.

    Frames of at least _FRAME_FACTOR times the extent (a power of two; on a CPU at most
    _CPU_FRAME_CAP samples, or twice the extent), or one frame for all outputs: on a CPU where
    that one is shorter, on a GPU where it takes fewer butterflies.
    """
    whole = fast_length(length + extent - 1)
    frame = 1 << max(_FRAME_FACTOR * extent - 1, _SMALLEST_FFT - 1).bit_length()
    if device == "cpu":
        if frame > _CPU_FRAME_CAP:
            frame = max(_CPU_FRAME_CAP, 1 << (2 * extent - 1).bit_length())
        return min(whole, frame)
    frames = -(-length // (frame - extent + 1))
    return whole if _butterflies(whole, 1) <= _butterflies(frame, frames) else frame


def polyphase_convolve(F, x, filters, down: int, start: int, length: int):
    """c[..., r, m] = sum_s sum_b x[..., b * down + s] * filters[r, s, m - b], for m from `start`.

    `x`: [rows, n] (rows and n static); `filters`: [P, down, E] of x's dtype. Returns
    [rows, P, length]: for each output phase r, the sum over the input phases s of the
    convolution of x's phase s with filters[r, s], its outputs start to start + length - 1. They
    need the samples from start - (E - 1) on, so that a later start needs fewer frames.
    """
    rows, n = x.shape[0], x.shape[-1]
    phases, extent = filters.shape[0], filters.shape[-1]
    per_phase = -(-n // down)
    if per_phase * down != n:
        x = F.pad_last(x, 0, per_phase * down - n)
    # [rows, B, down] -> [rows, down, B]: phase s of every row in a row of its own.
    x = F.swapaxes(F.reshape(x, (rows, per_phase, down)), -1, -2)
    size = _fft_size(extent, length, device_of(F, x))
    step = size - extent + 1
    frames = -(-length // step)
    # The samples from start - (extent - 1) on (zeros before the first), to the samples of one
    # step past the last frame's (or of the one frame).
    first = start - (extent - 1)
    if first > 0:
        x = x[..., first:]
    before = max(-first, 0)
    needed = size if frames == 1 else (frames + 1) * step
    end = needed - before - (per_phase - max(first, 0))
    if end < 0:
        x = x[..., : x.shape[-1] + end]
        end = 0
    x = F.pad_last(x, before, end)
    if frames == 1:
        x = F.reshape(x, (rows, 1, down, 1, size))
    else:
        # Frame f is samples [f step, f step + size): its step, then the next step's first
        # extent - 1 samples (a step is at least extent - 1 where there are several frames).
        head = F.reshape(x[..., : frames * step], (rows, 1, down, frames, step))
        tail = F.reshape(x[..., step : (frames + 1) * step], (rows, 1, down, frames, step))
        x = F.concatenate([head, tail[..., : extent - 1]], axis=-1)
    spectra = F.rfft(x, size)
    response = F.reshape(F.rfft(filters, size), (1, phases, down, 1, size // 2 + 1))
    products = spectra * response
    summed = F.sum(products, 2) if down > 1 else F.reshape(products, (rows, phases, frames, -1))
    # Each frame's last `step` outputs are the linear convolution's (the first wrap around).
    outputs = F.irfft(summed, size)[..., extent - 1 :]
    return F.reshape(outputs, (rows, phases, frames * step))[..., :length]


# The data the FFT route takes; anything else runs the op, which takes or refuses it.
_DTYPES = ("float32", "float64")
# Data the FFT route computes in float32, rounding its results once (the kernels' arithmetic).
_HALVES = ("float16", "bfloat16")


def operands(F, x, taps, limit: int):
    """(x, taps, restore) for the FFT route where it can take them, else None.

    x and taps are arrays of one dtype: x's, or float32 for float16 and bfloat16 data (the ops'
    compute type, which their tables have), whose result `restore` casts back to x's dtype, as
    the kernels round once; `restore` is the identity otherwise. None for what the op itself
    would refuse (it then runs, and names what it refuses), for data the framework shards
    (DTensor: the op has its sharding rules) and for shapes not static. `limit`: the most taps the
    op takes.
    """
    if hasattr(x, "placements"):  # a DTensor
        return None
    if framework(x) is None:  # a NumPy array or a sequence: the framework's array of it
        x = F.asarray(x)
    shape = tuple(x.shape)
    dtype = dtype_name(x)
    compute = "float32" if dtype in _HALVES else dtype
    if compute not in _DTYPES or not shape or not all(isinstance(d, int) for d in shape):
        return None
    if framework(taps) is not None:
        if len(taps.shape) != 1 or dtype_name(taps) != compute:
            return None
        count = taps.shape[0]
    elif isinstance(taps, np.ndarray):
        if taps.ndim != 1:
            return None
        count = taps.shape[0]
    else:
        # A sequence of numbers, read without NumPy (which torch.compile would trace).
        try:
            values = [float(v) for v in taps]
        except (TypeError, ValueError):
            return None
        count = len(values)
        taps = values
    if not isinstance(count, int) or not 1 <= count <= limit:
        return None
    restore = (lambda y: y) if compute == dtype else (lambda y: cast(y, dtype))
    if compute != dtype:
        x = cast(x, compute)
    # A static table is rounded to the table's dtype, as the op rounds one.
    if framework(taps) is None:
        taps = F.cast(taps, x)
    return x, taps, restore


def _as_rows(F, x):
    """(x as [rows, n], its leading shape), or a ValueError where the shape is not static."""
    shape = tuple(x.shape)
    if any(not isinstance(d, int) for d in shape):
        raise ValueError(f"method='fft' needs a static shape; got {shape}")
    rows = math.prod(shape[:-1])
    return F.reshape(x, (rows, shape[-1])), shape[:-1]


def _taps_table(F, taps, indices, like):
    """taps[indices] with zeros where an index is past the taps (-1 or k), as a framework array."""
    k = F.length(taps)
    padded = F.concat([taps, F.zeros(1, like)])
    safe = np.where((indices < 0) | (indices >= k), k, indices)
    return F.reshape(F.take(padded, safe.reshape(-1), 0), indices.shape)


def fir_filter(F, x, taps, padding: str):
    """FirFilter's correlation of every row with `taps` (SAME or VALID), by FFT."""
    rows, lead = _as_rows(F, x)
    n, k = x.shape[-1], F.length(taps)
    before = (k - 1) // 2 if padding == "SAME" else 0
    outputs = n if padding == "SAME" else max(n - k + 1, 0)
    if outputs == 0 or n == 0:
        return F.reshape(rows[..., :0], (*lead, outputs))
    # A correlation is the convolution with the taps reversed; y[i] = c[i + k - 1 - before].
    filters = F.reshape(F.flip(taps), (1, 1, k))
    y = polyphase_convolve(F, rows, filters, 1, k - 1 - before, outputs)
    return F.reshape(y, (*lead, outputs))


def upfirdn(F, x, taps, up: int, down: int, outputs: int):
    """Upfirdn's rows (scipy.signal.upfirdn along the last axis), `outputs` long, by FFT.

    With g = gcd(up, down), P = up / g and Q = down / g: output r + m P takes, for each input phase
    s, the taps d up Q + r down - s up (d = 0, 1, ...) against samples b Q + s, so that each of
    the P output phases is a sum of Q convolutions at the kept rate.
    """
    rows, lead = _as_rows(F, x)
    if outputs <= 0 or x.shape[-1] == 0:
        return F.reshape(rows[..., :0], (*lead, max(outputs, 0)))
    k = F.length(taps)
    common = math.gcd(up, down)
    phases, stride = up // common, down // common
    extent = (k - 1 + (stride - 1) * up) // (up * stride) + 1
    r = np.arange(phases)[:, None, None]
    s = np.arange(stride)[None, :, None]
    d = np.arange(extent)[None, None, :]
    filters = _taps_table(F, taps, d * up * stride + r * down - s * up, x)
    per_phase = -(-outputs // phases)
    c = polyphase_convolve(F, rows, filters, stride, 0, per_phase)
    # [rows, P, M] -> [rows, M, P]: output r + m P in place.
    y = F.reshape(F.swapaxes(c, -1, -2), (rows.shape[0], per_phase * phases))
    return F.reshape(y[..., :outputs], (*lead, outputs))
