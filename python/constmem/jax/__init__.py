# SPDX-License-Identifier: Apache-2.0
"""constmem's ops for JAX, on the XLA FFI handlers TensorFlow's XLA lowering calls.

    import jax.numpy as jnp
    import constmem.jax as cm

    y = cm.polyval([0.5, -1.0, 2.0], x)      # a static table: an attribute of the custom call
    y = cm.polyval(coeffs, x)                # a jax.Array table, an operand of the custom call

Each op is a `jax.ffi.ffi_call` into the same CPU kernel and CUDA launcher as the TensorFlow and
PyTorch ops (bitwise equal to them), under `jax.jit`, `jax.vmap` (a table per batch element runs
one call each) and `jax.grad` (gradients for the data and a jax.Array table, as TensorFlow's).
A static table reaches the handler as host memory with the same bytes at every call, so the GPU
launcher passes it by value or uploads it once per device and content, as a TensorFlow attr; a
jax.Array table is a device buffer, read in place or copied into constant memory. The CUDA
handlers are command-buffer compatible: XLA may record them into CUDA graphs. Bad shapes and
dtypes raise ValueError when the function is traced.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Sequence
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np

from constmem import _libraries

_libraries.check_framework_version("jax", None)  # the FFI is a C ABI: any JAX with jax.ffi
LIBRARY_PATH = _libraries.library_path("jax")
_library = ctypes.CDLL(LIBRARY_PATH)
_GPU = bool(_libraries.library_info("jax").get("gpu_kernels"))
_OPS = ("frobulate", "polyval", "fir_filter", "interpolate")
for _op in _OPS:
    for _target in (f"constmem_{_op}", f"constmem_{_op}_static"):
        jax.ffi.register_ffi_target(
            _target, jax.ffi.pycapsule(getattr(_library, f"{_target}_host")), "cpu"
        )
        if _GPU:
            jax.ffi.register_ffi_target(
                _target, jax.ffi.pycapsule(getattr(_library, f"{_target}_cuda")), "CUDA"
            )

MAX_TABLE_SIZE, MAX_COEFFICIENTS, MAX_TAPS, MAX_KNOTS = _libraries.op_limits(LIBRARY_PATH)
upload_stats, library_path = _libraries.accessors("jax", LIBRARY_PATH)

TableLike = jax.Array | np.ndarray | Sequence[float]
Padding = Literal["SAME", "VALID"]


def _float_data(x, name: str) -> jax.Array:
    x = jnp.asarray(x)
    if x.dtype not in (jnp.float32, jnp.float64):
        raise ValueError(f"{name} must be float32 or float64; got {x.dtype}")
    return x


def _check_length(size: int, name: str, max_size: int, min_size: int = 1) -> None:
    if not min_size <= size <= max_size:
        raise ValueError(f"{name} must have {min_size} to {max_size} entries; got {size}")


def _static_table(table, name: str, dtype, max_size: int, min_size: int = 1) -> tuple:
    """A Python or NumPy table as a tuple of `dtype`'s values: the static form.

    It becomes an attribute of the call and a hashable argument of the gradient rules.
    """
    values = np.asarray(table)
    if values.dtype.kind not in ("iu" if dtype == jnp.int32 else "iuf") and values.size:
        kind = "integers that fit int32" if dtype == jnp.int32 else "real numbers"
        raise ValueError(f"{name} must be {kind}; got {values.dtype}")
    if dtype == jnp.int32 and values.size and (values.min() < -(2**31) or values.max() >= 2**31):
        raise ValueError(f"{name} entries must fit int32")
    if values.ndim != 1:
        raise ValueError(f"{name} must be a vector (rank 1); got shape {values.shape}")
    _check_length(values.shape[0], name, max_size, min_size)
    return tuple(values.astype(dtype).tolist())


def _array_table(table: jax.Array, name: str, dtype, max_size: int, min_size: int = 1) -> jax.Array:
    """A jax.Array table as a vector of `dtype` (cast if of another real dtype)."""
    if table.dtype != dtype:
        if dtype == jnp.int32 and not jnp.issubdtype(table.dtype, jnp.integer):
            raise ValueError(f"{name} must be int32; got {table.dtype}")
        table = table.astype(dtype)
    if table.ndim != 1:
        raise ValueError(f"{name} must be a vector (rank 1); got shape {table.shape}")
    _check_length(table.shape[0], name, max_size, min_size)
    return table


def _batching(call):
    """`call(data, table)` with a rule for vmap.

    Batched data alone is one call over the larger array (the ops are elementwise, or filter along
    the last axis); a batched table takes one call per batch element.
    """
    batched = jax.custom_batching.custom_vmap(call)

    @batched.def_vmap
    def _rule(axis_size, in_batched, data, table):
        data_batched, table_batched = in_batched
        if not table_batched:
            return call(data, table), data_batched
        if not data_batched:
            data = jnp.broadcast_to(data, (axis_size, *data.shape))
        return jax.lax.map(lambda pair: call(*pair), (data, table)), True

    return batched


def _ffi(target: str, out_shape, **attributes):
    def call(data, table):
        result = jax.ShapeDtypeStruct(out_shape(data, table), data.dtype)
        return jax.ffi.ffi_call(target, result)(data, table, **attributes)

    return _batching(call)


_frobulate_call = _ffi("constmem_frobulate", lambda d, t: d.shape)
_polyval_call = _ffi("constmem_polyval", lambda x, c: x.shape)


def _static_ffi(target: str, out_shape, int32_table: bool = False, **attributes):
    """`call(data, values)` for a static table, sent as the attribute `table`.

    int32 entries (Frobulate), or float64 holding values of data's dtype. Batched data is one call
    over the larger array.
    """

    def call(data, values: tuple):
        result = jax.ShapeDtypeStruct(out_shape(data, len(values)), data.dtype)
        if int32_table:
            table = np.asarray(values, np.int32)
        else:
            table = np.asarray(values, data.dtype).astype(np.float64)
        return jax.ffi.ffi_call(target, result, vmap_method="expand_dims")(
            data, table=table, **attributes
        )

    return call


_frobulate_static_call = _static_ffi(
    "constmem_frobulate_static", lambda d, n: d.shape, int32_table=True
)
_polyval_static_call = _static_ffi("constmem_polyval_static", lambda x, n: x.shape)


def _fir_outputs(n: int, k: int, padding: str) -> int:
    return n if padding == "SAME" else max(n - k + 1, 0)


@functools.cache
def _fir_call(padding: str):
    return _ffi(
        "constmem_fir_filter",
        lambda x, t: (*x.shape[:-1], _fir_outputs(x.shape[-1], t.shape[0], padding)),
        same=np.int64(padding == "SAME"),
    )


@functools.cache
def _fir_static_call(padding: str):
    return _static_ffi(
        "constmem_fir_filter_static",
        lambda x, n: (*x.shape[:-1], _fir_outputs(x.shape[-1], n, padding)),
        same=np.int64(padding == "SAME"),
    )


# Gradients: the data's through the same ops, a jax.Array table's with jnp.


@jax.custom_vjp
def _frobulate(data, table):
    return _frobulate_call(data, table)


_frobulate.defvjp(lambda d, t: (_frobulate_call(d, t), None), lambda _, g: (g, None))


@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def _frobulate_static(data, values):
    return _frobulate_static_call(data, values)


_frobulate_static.defvjp(lambda d, v: (_frobulate_static_call(d, v), None), lambda v, _, g: (g,))


def _derivative(coeffs, n: int, arange):
    """Coefficients of a polynomial's derivative, highest degree first, in either form."""
    return coeffs[:-1] * arange(n - 1, 0, -1, dtype=coeffs.dtype) if n > 1 else coeffs * 0


@jax.custom_vjp
def _polyval(coeffs, x):
    return _polyval_call(x, coeffs)


def _polyval_fwd(coeffs, x):
    return _polyval_call(x, coeffs), (coeffs, x)


def _polyval_bwd(residuals, g):
    coeffs, x = residuals
    n = coeffs.shape[0]
    grad_x = g * _polyval_call(x, _derivative(coeffs, n, jnp.arange))
    return _coeffs_gradient(x.reshape(-1), g.reshape(-1), n), grad_x


@functools.partial(jax.jit, static_argnums=2)
def _coeffs_gradient(x, g, n: int):
    """d(sum(g * y)) / d coeffs[i] = sum(g * x**(n-1-i)).

    Compiled also when the caller is not: XLA fuses the powers into the reduction, so that no
    [elements, n] array of powers is ever stored.
    """
    return (x[:, None] ** jnp.arange(n - 1, -1, -1, dtype=x.dtype) * g[:, None]).sum(0)


_polyval.defvjp(_polyval_fwd, _polyval_bwd)


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def _polyval_static(values, x):
    return _polyval_static_call(x, values)


def _polyval_static_bwd(values, x, g):
    coeffs = np.asarray(values, x.dtype)
    derivative = tuple(_derivative(coeffs, len(values), np.arange).tolist())
    return (g * _polyval_static_call(x, derivative),)


_polyval_static.defvjp(lambda v, x: (_polyval_static_call(x, v), x), _polyval_static_bwd)


def _pad_left(k: int, padding: str) -> int:
    return (k - 1) // 2 if padding == "SAME" else 0


@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def _fir_filter(x, taps, padding):
    return _fir_call(padding)(x, taps)


def _fir_fwd(x, taps, padding):
    return _fir_call(padding)(x, taps), (x, taps)


def _fir_bwd(padding, residuals, g):
    x, taps = residuals
    k, n, m = taps.shape[0], x.shape[-1], g.shape[-1]
    pad_left = _pad_left(k, padding)
    widths = [(0, 0)] * (g.ndim - 1)
    grad_x = _fir_call("VALID")(_grad_x_padding(g, k, n, padding), taps[::-1])
    # dtaps[j] = sum over rows and outputs of g[o] xp[o + j].
    xp = jnp.pad(x, [*widths, (pad_left, m + k - 1 - n - pad_left)])

    def tap(j):
        return jnp.sum(g * jax.lax.dynamic_slice_in_dim(xp, j, m, axis=-1))

    return grad_x, jax.lax.map(tap, jnp.arange(k))


_fir_filter.defvjp(_fir_fwd, _fir_bwd)


def _grad_x_padding(g, k: int, n: int, padding: str):
    """The gradient `g` padded so that a VALID filter with the reversed taps gives x's."""
    m = g.shape[-1]
    pad_left = _pad_left(k, padding)
    return jnp.pad(g, [(0, 0)] * (g.ndim - 1) + [(k - 1 - pad_left, n - m + pad_left)])


@functools.partial(jax.custom_vjp, nondiff_argnums=(1, 2))
def _fir_filter_static(x, values, padding):
    return _fir_static_call(padding)(x, values)


def _fir_static_bwd(values, padding, x, g):
    padded = _grad_x_padding(g, len(values), x.shape[-1], padding)
    return (_fir_static_call("VALID")(padded, values[::-1]),)


_fir_filter_static.defvjp(lambda x, v, p: (_fir_static_call(p)(x, v), x), _fir_static_bwd)


@functools.cache
def _interpolate_call(lo: float, hi: float):
    return _ffi("constmem_interpolate", lambda x, k: x.shape, lo=np.float64(lo), hi=np.float64(hi))


@functools.cache
def _interpolate_static_call(lo: float, hi: float):
    return _static_ffi(
        "constmem_interpolate_static", lambda x, n: x.shape, lo=np.float64(lo), hi=np.float64(hi)
    )


def _interpolate_gradients(x, knots, lo: float, hi: float, g):
    """d/dx and d/dknots of sum(g * y), with jnp, in the op's own arithmetic."""
    n = knots.shape[0]
    lo_t = jnp.asarray(lo, x.dtype)
    scale = jnp.asarray(n - 1, x.dtype) / (jnp.asarray(hi, x.dtype) - lo_t)
    t = (x - lo_t) * scale
    inside = (t > 0) & (t < n - 1)
    t_inside = jnp.where(inside, t, 0)
    i = jnp.minimum(jnp.floor(t_inside).astype(jnp.int32), n - 2)
    f = t_inside - i.astype(x.dtype)
    below, above = knots[i], knots[i + 1]
    grad_x = jnp.where(inside, g * ((above - below) * scale), 0)
    at_below = jnp.where(inside, g * (1 - f), jnp.where(t <= 0, g, 0))
    at_above = jnp.where(inside, g * f, 0)
    grad_knots = (
        jnp.zeros(n, x.dtype)
        .at[i.reshape(-1)]
        .add(at_below.reshape(-1))
        .at[(i + 1).reshape(-1)]
        .add(at_above.reshape(-1))
        .at[n - 1]
        .add(jnp.sum(jnp.where(t >= n - 1, g, 0)))
    )
    return grad_x, grad_knots


@functools.partial(jax.custom_vjp, nondiff_argnums=(2, 3))
def _interpolate(x, knots, lo, hi):
    return _interpolate_call(lo, hi)(x, knots)


def _interpolate_fwd(x, knots, lo, hi):
    return _interpolate_call(lo, hi)(x, knots), (x, knots)


def _interpolate_bwd(lo, hi, residuals, g):
    x, knots = residuals
    return _interpolate_gradients(x, knots, lo, hi, g)


_interpolate.defvjp(_interpolate_fwd, _interpolate_bwd)


@functools.partial(jax.custom_vjp, nondiff_argnums=(1, 2, 3))
def _interpolate_static(x, values, lo, hi):
    return _interpolate_static_call(lo, hi)(x, values)


def _interpolate_static_bwd(values, lo, hi, x, g):
    knots = jnp.asarray(np.asarray(values, x.dtype))
    return (_interpolate_gradients(x, knots, lo, hi, g)[0],)


_interpolate_static.defvjp(
    lambda x, v, lo, hi: (_interpolate_static_call(lo, hi)(x, v), x), _interpolate_static_bwd
)


def frobulate(data, table: TableLike | Sequence[int]) -> jax.Array:
    """`(((data + table[0]) + table[1]) + ... + table[n-1])`, left to right in data's dtype.

    data: float32 or float64, any shape. table: 1 to 16,384 integers that fit int32.
    """
    data = _float_data(data, "data")
    if isinstance(table, jax.Array):
        return _frobulate(data, _array_table(table, "table", jnp.int32, MAX_TABLE_SIZE))
    return _frobulate_static(data, _static_table(table, "table", jnp.int32, MAX_TABLE_SIZE))


def polyval(coeffs: TableLike, x) -> jax.Array:
    """Horner's rule with one fused multiply-add per step (highest degree first, as np.polyval)."""
    x = _float_data(x, "x")
    if isinstance(coeffs, jax.Array):
        return _polyval(_array_table(coeffs, "coeffs", x.dtype, MAX_COEFFICIENTS), x)
    return _polyval_static(_static_table(coeffs, "coeffs", x.dtype, MAX_COEFFICIENTS), x)


def fir_filter(x, taps: TableLike, *, padding: Padding = "SAME") -> jax.Array:
    """Filters every row of x (its last axis) with `taps`, as a correlation (`np.correlate`)."""
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"padding must be 'SAME' or 'VALID'; got {padding!r}")
    x = _float_data(x, "x")
    if x.ndim < 1:
        raise ValueError("x must have rank 1 or more (the filter runs along the last axis)")
    if isinstance(taps, jax.Array):
        return _fir_filter(x, _array_table(taps, "taps", x.dtype, MAX_TAPS), padding)
    return _fir_filter_static(x, _static_table(taps, "taps", x.dtype, MAX_TAPS), padding)


def interpolate(x, knots: TableLike, lo: float, hi: float) -> jax.Array:
    """Interpolates linearly into `knots` (n values at n equally spaced points over [lo, hi]).

    `np.interp(x, np.linspace(lo, hi, n), knots)`, clamped outside [lo, hi], bitwise equal to
    `constmem.tensorflow.interpolate`. knots: 2 to 16,384 values; lo < hi, finite in x's dtype.
    """
    x = _float_data(x, "x")
    bounds = np.asarray([lo, hi], x.dtype)
    if not (np.all(np.isfinite(bounds)) and bounds[0] < bounds[1]):
        raise ValueError(f"the range [lo, hi] must be finite with lo < hi; got [{lo}, {hi}]")
    lo, hi = float(bounds[0]), float(bounds[1])
    if isinstance(knots, jax.Array):
        return _interpolate(x, _array_table(knots, "knots", x.dtype, MAX_KNOTS, 2), lo, hi)
    values = _static_table(knots, "knots", x.dtype, MAX_KNOTS, 2)
    return _interpolate_static(x, values, lo, hi)


__all__ = [
    "MAX_COEFFICIENTS",
    "MAX_KNOTS",
    "MAX_TABLE_SIZE",
    "MAX_TAPS",
    "fir_filter",
    "frobulate",
    "interpolate",
    "library_path",
    "polyval",
    "upload_stats",
]
del _op
