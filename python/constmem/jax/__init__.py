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
jax.Array table is a device buffer, read in place or copied into constant memory, and must have
the op's table dtype exactly (int32, or the data's dtype). The CUDA handlers are command-buffer
compatible: XLA may record them into CUDA graphs. Bad shapes, dtypes and values raise ValueError
when the function is traced.

An op with several outputs (codes and absmax) returns a tuple of them, one custom call of several
results; a gradient flows from its float outputs alone.

An op with several tables (weight and bias) takes each in either form: all static makes one
custom call with each table an attribute; otherwise the static ones are constant operands beside
the jax.Array ones, each checked under its own name and given its own gradient.

The library exports its op registry and its handlers: every op of the build is registered and
has a function here, with its limit (MAX_TAPS, ...).
"""

from __future__ import annotations

import ctypes
import functools
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from constmem import _binding, _libraries, _registry
from constmem import ops as descriptions
from constmem._registry import OpSpec
from constmem.jax import _partitioning
from constmem.ops._functions import OperatorBits

_libraries.check_framework_version("jax", None)  # the FFI is a C ABI: any JAX with jax.ffi
LIBRARY_PATH = _libraries.library_path("jax")
_DESCRIPTIONS: dict[str, Any] = {}  # every registered op's Python description, by FFI target
# Every registered op's library check (constmem._registry.call_checker), by FFI target.
_CHECKERS: dict[str, _registry.CallChecker | None] = {}


def register_library(path: str, described: Mapping[str, ModuleType] | None = None):
    """Registers both forms of every op the library at `path` lists, for the CPU and CUDA.

    The ops come from its op registry, their handlers from its `constmem_ffi_handler`; a library
    without GPU kernels has no CUDA handlers.
    """
    ops = _registry.read_registry(path)
    described = _binding.descriptions_of(ops, described)
    find = ctypes.CDLL(path).constmem_ffi_handler
    find.restype = ctypes.c_void_p
    find.argtypes = (ctypes.c_char_p, ctypes.c_char_p)
    checker = _registry.call_checker(path)
    for spec in ops.values():
        _DESCRIPTIONS[spec.target] = described[spec.name]
        _CHECKERS[spec.target] = checker
        for target in (spec.target, spec.target + "_static"):
            for platform in ("cpu", "CUDA"):
                handler = find(target.encode(), platform.encode())
                if handler:  # a library without GPU kernels has no CUDA handlers
                    jax.ffi.register_ffi_target(target, jax.ffi.pycapsule(handler), platform)
    return ops, described


OPS, _ = register_library(LIBRARY_PATH)
upload_stats, library_path = _libraries.accessors("jax", LIBRARY_PATH)
table_placements = _libraries.placements_function(upload_stats)
placement_of = _libraries.placement_function(LIBRARY_PATH, OPS)


def _attribute(kind: str, value: Any) -> Any:
    """An attribute as the FFI handler decodes it by kind."""
    if kind == "float64":
        return np.float64(value)
    if kind == "int64":
        return np.int64(value)
    return str(value)


def _output_shape(spec: OpSpec, shape, size, attrs: dict) -> tuple:
    """The result's shape; `size` is the table's, or a tuple of each table's for several."""
    return descriptions.output_shape(_DESCRIPTIONS[spec.target], shape, size, attrs)


def _check_call(spec: OpSpec, dtype: str, shape, size, attrs: dict) -> None:
    """Runs the library's own checks of the call (its C++ description's) while JAX traces.

    A refusal is then a ValueError here rather than an error when the call runs. Symbolic shapes
    are left to the Python description.
    """
    checker = _CHECKERS.get(spec.target)
    if checker is not None and all(isinstance(d, int) for d in shape):
        checker(spec, dtype, tuple(shape), size, attrs)


def _bytes_text(count: float) -> str:
    """'17.6 TB': a size in bytes as the messages give it (PyTorch's binding words it alike)."""
    units = ("bytes", "kB", "MB", "GB", "TB", "PB", "EB")
    unit = 0
    while count >= 1000 and unit + 1 < len(units):
        count /= 1000
        unit += 1
    return f"{count:.0f} {units[unit]}" if unit == 0 else f"{count:.1f} {units[unit]}"


def _check_fits(spec: OpSpec, data, shape: tuple, attrs: dict) -> None:
    """Refuses a result larger than its device's memory with its size, before XLA allocates it.

    The device: the data's, or where jit places a traced call (the default backend's first).
    `shape`: the result's (each output's for an op with several).
    """
    if spec.several_outputs:
        dtypes = spec.output_dtypes_of(str(data.dtype), attrs)
        for i, (one, dtype) in enumerate(zip(shape, dtypes, strict=True)):
            _check_fits_one(spec.output_label(i), data, one, np.dtype(dtype))
    else:
        _check_fits_one(spec.output_label(0), data, shape, np.dtype(data.dtype))


def _check_fits_one(label: str, data, shape: tuple, dtype: np.dtype) -> None:
    if not all(isinstance(d, int) for d in shape):
        return
    need = math.prod(shape) * dtype.itemsize
    if isinstance(data, jax.core.Tracer) or not hasattr(data, "devices"):
        device = jax.devices()[0]
    else:
        device = next(iter(data.devices()))
    if device.platform == "cpu":
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        where = "this machine's memory"
    else:
        memory = (device.memory_stats() or {}).get("bytes_limit", 0)
        where = f"{device.device_kind}'s memory"
    if memory > 0 and need > memory:
        raise ValueError(
            f"{label} of shape {list(shape)} would need {_bytes_text(need)} "
            f"({dtype}), more than {where} ({_bytes_text(memory)})"
        )


def _encoded(spec: OpSpec, attrs: dict) -> dict:
    return {a.name: _attribute(a.kind, attrs[a.name]) for a in spec.attrs}


def _sharded(spec: OpSpec, data_shape, sizes, attrs: dict, local, static=None):
    """`local` (one custom call on `data_shape`) run shard by shard on sharded arrays.

    `sizes` as _output_shape takes them; see constmem.jax._partitioning.sharded for `static`.
    Symbolic shapes (jax.export) are left to the partitioner as they are.
    """
    if not all(isinstance(d, int) for d in data_shape):
        return local
    axes = descriptions.axes(_DESCRIPTIONS[spec.target], data_shape, sizes, attrs)
    each = sizes if isinstance(sizes, tuple) else (sizes,)
    ranks = None
    if spec.several_outputs:
        ranks = tuple(len(s) for s in _output_shape(spec, data_shape, sizes, attrs))
    return _partitioning.sharded(local, axes, data_shape, each, static, ranks)


def _ffi_local(spec: OpSpec, target: str, sizes, attrs: dict, tables: dict):
    """`local(data, *arrays)`: the custom call `target` on a shard of any shape.

    `tables`: the attribute tables (their `sizes`, as _output_shape takes them); array tables
    are operands, each shard's of its own size.
    """
    encoded = {**tables, **_encoded(spec, attrs)}

    def local(data, *arrays):
        if arrays:
            sizes_here = tuple(a.shape[0] for a in arrays)
            sizes_here = sizes_here if spec.several_tables else sizes_here[0]
        else:
            sizes_here = sizes
        shape = _output_shape(spec, data.shape, sizes_here, attrs)
        dtypes = spec.output_dtypes_of(str(data.dtype), attrs)
        if spec.several_outputs:  # one result each, a tuple
            result = tuple(jax.ShapeDtypeStruct(s, d) for s, d in zip(shape, dtypes, strict=True))
        else:
            result = jax.ShapeDtypeStruct(shape, dtypes[0])
        return jax.ffi.ffi_call(target, result)(data, *arrays, **encoded)

    return local


@functools.cache
def _array_call(spec: OpSpec, attr_items: tuple):
    """`call(data, *tables)` with jax.Array tables (one per table, in order), with a rule for vmap.

    Batched data alone is one call over the larger array (the ops are elementwise, or work along
    the last axis, or along the last two); a batched table takes one call per batch element, as
    does an op of several outputs (they need not follow the data's axes). On sharded arrays the
    call runs shard by shard (constmem.jax._partitioning).
    """
    attrs = dict(attr_items)

    def call(data, *tables):
        sizes = tuple(t.shape[0] for t in tables) if spec.several_tables else tables[0].shape[0]
        local = _ffi_local(spec, spec.target, sizes, attrs, {})
        return _sharded(spec, data.shape, sizes, attrs, local)(data, *tables)

    batched = jax.custom_batching.custom_vmap(call)

    @batched.def_vmap
    def _rule(axis_size, in_batched, data, *tables):
        if not any(in_batched[1:]) and not spec.several_outputs:
            return call(data, *tables), in_batched[0]
        operands = tuple(
            t if b else jnp.broadcast_to(t, (axis_size, *t.shape))
            for t, b in zip((data, *tables), in_batched, strict=True)
        )
        batched_out = tuple(True for _ in spec.outputs) if spec.several_outputs else True
        return jax.lax.map(lambda each: call(*each), operands), batched_out

    return batched


def _static_attribute(spec: OpSpec, values: tuple, data_dtype: str) -> np.ndarray:
    """A static table as its attribute: int32 values, or float64 holding values of its dtype."""
    if spec.int32_table:
        return np.asarray(values, np.int32)
    return np.asarray(values, spec.table_dtype(data_dtype)).astype(np.float64)


def _static_call(spec: OpSpec, data, values: tuple, attrs: dict):
    """The op with static tables, each sent as an attribute.

    One table is the attribute `table` (`values` its entries); several are each under its own
    name (`values` a tuple of each one's entries). Batched data is one call over the larger
    array. On sharded arrays the call runs shard by shard; a shard that takes a block of a
    split table (per-image taps) gets it as an operand of the array form.
    """
    return _static_batched(spec, values, tuple(attrs.items()))(data)


def _static_batched(spec: OpSpec, values: tuple, attr_items: tuple):
    attrs = dict(attr_items)

    def call(data):
        dtype = str(data.dtype)
        one = (values,) if not spec.several_tables else values
        specs = [spec.table_spec(i) for i in range(len(one))] if spec.several_tables else [spec]
        arrays = tuple(np.asarray(v, s.table_dtype(dtype)) for s, v in zip(specs, one, strict=True))
        names = [t.name for t in spec.tables] if spec.several_tables else ["table"]
        tables = {
            name: _static_attribute(s, v, dtype)
            for name, s, v in zip(names, specs, one, strict=True)
        }
        sizes = tuple(len(v) for v in one) if spec.several_tables else len(values)
        local = _ffi_local(spec, spec.target + "_static", sizes, attrs, tables)
        array_local = _ffi_local(spec, spec.target, sizes, attrs, {})
        return _sharded(spec, data.shape, sizes, attrs, local, (array_local, arrays))(data)

    batched = jax.custom_batching.custom_vmap(call)

    @batched.def_vmap
    def _rule(axis_size, in_batched, data):
        if spec.several_outputs:  # one call per batch element: the outputs need not follow data
            return jax.lax.map(call, data), tuple(True for _ in spec.outputs)
        return call(data), in_batched[0]

    return batched


def _constant_tables(spec: OpSpec, data_dtype: str, values: tuple, arrays: tuple) -> tuple:
    """Each of several tables as an array, in order.

    `values[i]` is table i's static entries, or None where table i is the next of `arrays`.
    """
    rest = iter(arrays)
    return tuple(
        next(rest)
        if v is None
        else jnp.asarray(np.asarray(v, spec.table_spec(i).table_dtype(data_dtype)))
        for i, v in enumerate(values)
    )


class JaxArrays(OperatorBits):
    """The array namespace F of the ops' backward formulas (constmem.ops.ARRAY_API), in JAX."""

    def __init__(self, spec: OpSpec, attrs: dict) -> None:
        self._spec = spec
        self._attrs = attrs

    def op(self, data, *tables, **attrs):
        merged = {**self._attrs, **attrs}
        return _array_call(self._spec, tuple(merged.items()))(data, *tables)

    def __getattr__(self, name):
        """Any other name is jax.numpy's (the array API standard's names: exp, tanh, sum, ...)."""
        return getattr(jnp, name)

    @staticmethod
    def sigmoid(t):
        return jax.nn.sigmoid(t)

    @staticmethod
    def rfft(t, n):
        return jnp.fft.rfft(t, n, axis=-1)

    @staticmethod
    def irfft(t, n):
        return jnp.fft.irfft(t, n, axis=-1)

    def compiled(self, fn, *static):
        return _compiled_route(fn, self, static)

    @staticmethod
    def on_gpu(t):
        """A concrete array's devices; a traced one runs where jit places it, the default."""
        if isinstance(t, jax.core.Tracer):
            return jax.default_backend() == "gpu"
        return any(d.platform == "gpu" for d in t.devices())

    @staticmethod
    def length(table):
        return table.shape[0]

    @staticmethod
    def size(t, axis):
        return t.shape[axis]

    @staticmethod
    def scalar(value, like):
        return jnp.asarray(value, like.dtype)

    @staticmethod
    def cast(t, like):
        return jnp.asarray(t).astype(like.dtype)

    @staticmethod
    def zeros(n, like):
        return jnp.zeros(n, like.dtype)

    @staticmethod
    def arange(start, stop, step, like):
        return jnp.arange(start, stop, step, dtype=like.dtype)

    @staticmethod
    def concat(vectors, axis=0):
        return jnp.concatenate(vectors, axis=axis)

    @staticmethod
    def flip(vector):
        return vector[::-1]

    @staticmethod
    def where(condition, a, b):
        return jnp.where(condition, a, b)

    @staticmethod
    def minimum(t, number):
        return jnp.minimum(t, number)

    @staticmethod
    def maximum(t, number):
        return jnp.maximum(t, number)

    @staticmethod
    def round(t):
        return jnp.round(t)

    @staticmethod
    def floor_int(t):
        return jnp.floor(t).astype(jnp.int32)

    @staticmethod
    def gather(vector, indices):
        return vector[indices]

    @staticmethod
    def scatter_add(n, indices, values, like):
        return jnp.zeros(n, values.dtype).at[indices.reshape(-1)].add(values.reshape(-1))

    @staticmethod
    def pad_last(t, before, after):
        return jnp.pad(t, [(0, 0)] * (t.ndim - 1) + [(before, after)])

    @staticmethod
    def power_sums(x, g, n):
        return _power_sums(x.reshape(-1), g.reshape(-1), n)

    @staticmethod
    def correlate_rows(padded, g):
        m = g.shape[-1]
        k = padded.shape[-1] - m + 1

        def tap(j):
            return jnp.sum(g * jax.lax.dynamic_slice_in_dim(padded, j, m, axis=-1))

        return jax.lax.map(tap, jnp.arange(k))

    @staticmethod
    def row_sums(t):
        return t.reshape(-1, t.shape[-1]).sum(-1)

    @staticmethod
    def pad_axis(t, axis, before, after):
        widths = [(0, 0)] * t.ndim
        widths[axis] = (before, after)
        return jnp.pad(t, widths)

    @staticmethod
    def take(t, indices, axis):
        return jnp.take(t, np.asarray(indices), axis=axis)

    @staticmethod
    def reshape(t, shape):
        return t.reshape(shape)

    @staticmethod
    def astype(value, dtype, like=None):
        return jnp.asarray(value, dtype)

    @staticmethod
    def bitcast(t, dtype):
        return jax.lax.bitcast_convert_type(t, getattr(jnp, dtype))

    @staticmethod
    def stop_gradient(t):
        return jax.lax.stop_gradient(t)


@functools.lru_cache(maxsize=64)
def _compiled_route(fn, F, static: tuple):
    """fn(F, *arrays, *static) under jax.jit: eagerly one executable, not an op a dispatch."""
    return jax.jit(lambda *arrays: fn(F, *arrays, *static))


@functools.partial(jax.jit, static_argnums=2)
def _power_sums(x, g, n: int):
    """sum(g * x**k) for k < n, compiled also when the caller is not.

    XLA fuses the powers into the reduction, so that no [elements, n] array of powers is stored.
    """
    return (x[:, None] ** jnp.arange(n, dtype=x.dtype) * g[:, None]).sum(0)


def _gradients(spec: OpSpec, attrs: dict, grad, data, tables: tuple, need_tables: tuple):
    """The description's backward: (grad_data, *one gradient per table).

    float16 and bfloat16 data are computed in float32: their gradients are the float32 call's, the
    data's cast back to its dtype (as for a cast, the op in float32 and a cast back).
    """
    backward = _DESCRIPTIONS[spec.target].backward
    arrays = JaxArrays(spec, attrs)
    # One gradient per output: None for an integer one (its cotangent is JAX's float0 zeros).
    grads = grad if spec.several_outputs else (grad,)
    floats = spec.float_outputs(str(data.dtype), attrs)
    grads = tuple(g if f else None for g, f in zip(grads, floats, strict=True))
    if not jnp.issubdtype(data.dtype, jnp.floating):  # integer data: the tables' gradients alone
        _, *grad_tables = backward(arrays, *grads, data, *tables, attrs, False, *need_tables)
        return (None, *grad_tables)
    if data.dtype in (jnp.float16, jnp.bfloat16):
        grad_data, *grad_tables = backward(
            arrays,
            *(None if g is None else g.astype(jnp.float32) for g in grads),
            data.astype(jnp.float32),
            *tables,
            attrs,
            True,
            *need_tables,
        )
        return (None if grad_data is None else grad_data.astype(data.dtype), *grad_tables)
    return backward(arrays, *grads, data, *tables, attrs, True, *need_tables)


@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 3))
def _with_array(spec: OpSpec, data, table, attr_items: tuple):
    return _array_call(spec, attr_items)(data, table)


def _with_array_fwd(spec, data, table, attr_items):
    return _array_call(spec, attr_items)(data, table), (data, table)


def _with_array_bwd(spec, attr_items, residuals, grad):
    data, table = residuals
    need_table = not spec.int32_table
    grad_data, grad_table = _gradients(spec, dict(attr_items), grad, data, (table,), (need_table,))
    return grad_data, grad_table


_with_array.defvjp(_with_array_fwd, _with_array_bwd)


@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 2, 4))
def _with_tables(spec: OpSpec, data, values: tuple, arrays: tuple, attr_items: tuple):
    """The op with several tables, a gradient to each jax.Array one.

    `arrays` are the jax.Array tables, `values` the static ones' entries (None in the place of
    each array), as _constant_tables takes them.
    """
    return _tables_call(spec, data, values, arrays, attr_items)


def _tables_call(spec: OpSpec, data, values: tuple, arrays: tuple, attr_items: tuple):
    tables = _constant_tables(spec, str(data.dtype), values, arrays)
    return _array_call(spec, attr_items)(data, *tables)


def _with_tables_fwd(spec, data, values, arrays, attr_items):
    return _tables_call(spec, data, values, arrays, attr_items), (data, arrays)


def _with_tables_bwd(spec, values, attr_items, residuals, grad):
    data, arrays = residuals
    tables = _constant_tables(spec, str(data.dtype), values, arrays)
    # A gradient to each jax.Array table of the data's type; none to a static or int32 one.
    needs = tuple(v is None and not t.int32 for v, t in zip(values, spec.tables, strict=True))
    grad_data, *grad_tables = _gradients(spec, dict(attr_items), grad, data, tables, needs)
    return grad_data, tuple(g for g, v in zip(grad_tables, values, strict=True) if v is None)


_with_tables.defvjp(_with_tables_fwd, _with_tables_bwd)


@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 2, 3))
def _with_static(spec: OpSpec, data, values: tuple, attr_items: tuple):
    return _static_call(spec, data, values, dict(attr_items))


def _with_static_fwd(spec, data, values, attr_items):
    return _static_call(spec, data, values, dict(attr_items)), data


def _with_static_bwd(spec, values, attr_items, data, grad):
    if spec.several_tables:
        tables = _constant_tables(spec, str(data.dtype), values, ())
    else:
        tables = (jnp.asarray(np.asarray(values, spec.table_dtype(str(data.dtype)))),)
    needs = (False,) * len(tables)
    return (_gradients(spec, dict(attr_items), grad, data, tables, needs)[0],)


_with_static.defvjp(_with_static_fwd, _with_static_bwd)


# Eagerly, JAX traces a custom_vjp function anew at every call and compiles its primitive for
# every new jaxpr: milliseconds a call, and a static table's constant compiled again each time.
# Each call therefore goes through a jax.jit function made once per op, attributes and static
# table (jit then compiles once per shape and dtype, and under an outer trace it is inlined).
_COMPILED_CALLS_KEPT = 256
# The static tables' entries the kept compiled calls may hold together (their values, as Python
# floats, and the constants of their executables), besides the count of calls.
_STATIC_ENTRIES_KEPT = 1 << 22


def _differentiable(spec: OpSpec, dtype: str) -> bool:
    """Whether a gradient flows: to float data, and to the tables where the output is a float."""
    return dtype in ("float32", "float64", "float16", "bfloat16") or spec.float_output


@functools.lru_cache(maxsize=_COMPILED_CALLS_KEPT)
def _compiled_array_call(spec: OpSpec, attr_items: tuple, differentiable: bool):
    """The op with a jax.Array table under jax.jit, with its gradient where one flows."""
    if differentiable:
        return jax.jit(lambda data, table: _with_array(spec, data, table, attr_items))
    # Integer results: no gradient flows through the rounding, to the table either (zero, as for
    # JAX's own integer results).
    call = _array_call(spec, attr_items)
    return jax.jit(lambda data, table: call(data, jax.lax.stop_gradient(table)))


_static_calls: OrderedDict[tuple, Any] = OrderedDict()
_static_calls_lock = threading.Lock()  # calls from several threads share the cache


def _static_entries(key: tuple) -> int:
    """The static entries a kept call's key holds (its values: one table's, or several's)."""
    spec, values = key[0], key[1]
    if spec.several_tables:
        return sum(len(v) for v in values if v is not None)
    return len(values)


def _compile(spec: OpSpec, values: tuple, attr_items: tuple, differentiable: bool):
    """The op with static `values` under jax.jit.

    `fn(data)`; or `fn(data, *arrays)` for an op with several tables some of which are
    jax.Arrays (None in their place in `values`).
    """
    if spec.several_tables and any(v is None for v in values):
        if differentiable:
            return jax.jit(
                lambda data, *arrays: _with_tables(spec, data, values, arrays, attr_items)
            )
        return jax.jit(
            lambda data, *arrays: _tables_call(
                spec, data, values, tuple(map(jax.lax.stop_gradient, arrays)), attr_items
            )
        )
    if differentiable:
        return jax.jit(lambda data: _with_static(spec, data, values, attr_items))
    checked = dict(attr_items)
    return jax.jit(lambda data: _static_call(spec, data, values, checked))


def _compiled_static_call(spec: OpSpec, values: tuple, attr_items: tuple, differentiable: bool):
    """The op with the static table `values` under jax.jit, kept while recently used.

    For an op with several tables, `values` holds each one's entries, None for a jax.Array.
    """
    key = (spec, values, attr_items, differentiable)
    with _static_calls_lock:
        compiled = _static_calls.get(key)
        if compiled is not None:
            _static_calls.move_to_end(key)
            return compiled
    compiled = _compile(spec, values, attr_items, differentiable)
    with _static_calls_lock:
        _static_calls[key] = compiled
        entries = sum(_static_entries(k) for k in _static_calls)
        while len(_static_calls) > 1 and (
            len(_static_calls) > _COMPILED_CALLS_KEPT or entries > _STATIC_ENTRIES_KEPT
        ):
            oldest, _ = _static_calls.popitem(last=False)
            entries -= _static_entries(oldest)
    return compiled


def _check_array_table(spec: OpSpec, dtype: str, table) -> None:
    """A jax.Array table's rank, size and dtype, as `spec`'s table (OpSpec.table_spec)."""
    if table.ndim != 1:
        raise ValueError(f"{spec.table} must be a vector (rank 1); got shape {table.shape}")
    _registry.check_size(spec, table.shape[0])
    if str(table.dtype) != spec.table_dtype(dtype):
        raise ValueError(_registry.table_dtype_message(spec, dtype, str(table.dtype)))


def _on_data_device(data: jax.Array, table: jax.Array) -> jax.Array:
    """A table on another device than the data's, copied there.

    As PyTorch takes a CPU tensor's table for a CUDA tensor; traced tables are jit's to place.
    """
    if isinstance(data, jax.core.Tracer) or isinstance(table, jax.core.Tracer):
        return table
    if table.sharding == data.sharding or len(data.devices()) != 1:
        return table  # the common case, or data jit must place the table for
    return jax.device_put(table, data.sharding)


def _make_call(spec: OpSpec, description: ModuleType):
    """The function that checks a call of the op and runs it with a jax.Array or static table.

    An op with several tables gets them as a tuple (constmem._binding), each in either form.
    """
    check = getattr(description, "check", None)
    each = tuple(spec.table_spec(i) for i in range(len(spec.tables)))

    def checked_call(data, attrs: tuple) -> tuple:
        """(data as an array, its dtype, the checked attributes): what every call checks first."""
        data = jnp.asarray(data)
        dtype = str(data.dtype)
        if dtype not in spec.data_dtypes():
            raise ValueError(_registry.data_dtype_message(spec, dtype))
        given = {a.name: v for a, v in zip(spec.attrs, attrs, strict=True)}
        checked = _registry.attr_values(spec, given, dtype)
        if check is not None:
            check(checked)
        return data, dtype, checked

    def call(spec: OpSpec, data, table, attrs: tuple) -> jax.Array:
        data, dtype, checked = checked_call(data, attrs)
        attr_items = tuple(checked.items())
        differentiable = _differentiable(spec, dtype)
        if isinstance(table, jax.Array):
            _check_array_table(spec, dtype, table)
            # The library's checks first: the Python description's shape assumes them passed.
            _check_call(spec, dtype, data.shape, table.shape[0], checked)
            shape = _output_shape(spec, data.shape, table.shape[0], checked)  # refused at trace
            _check_fits(spec, data, shape, checked)
            compiled = _compiled_array_call(spec, attr_items, differentiable)
            return compiled(data, _on_data_device(data, table))
        values = tuple(_registry.static_values(spec, table, dtype).tolist())
        _check_call(spec, dtype, data.shape, len(values), checked)
        _check_fits(spec, data, _output_shape(spec, data.shape, len(values), checked), checked)
        return _compiled_static_call(spec, values, attr_items, differentiable)(data)

    # Several tables: each table checked in turn, a static one's entries part of the compiled call.
    def call_with_tables(spec: OpSpec, data, tables: tuple, attrs: tuple) -> jax.Array:
        data, dtype, checked = checked_call(data, attrs)
        # Each table checked under its own name: a jax.Array's entries stay in it (None in
        # `values`), a static one's are part of the compiled call.
        values, arrays = [], []
        for one, table in zip(each, tables, strict=True):
            if isinstance(table, jax.Array):
                _check_array_table(one, dtype, table)
                values.append(None)
                arrays.append(_on_data_device(data, table))
            else:
                values.append(tuple(_registry.static_values(one, table, dtype).tolist()))
        sizes = tuple(
            len(v) if v is not None else t.shape[0] for v, t in zip(values, tables, strict=True)
        )
        _check_call(spec, dtype, data.shape, sizes, checked)
        _check_fits(spec, data, _output_shape(spec, data.shape, sizes, checked), checked)
        compiled = _compiled_static_call(
            spec, tuple(values), tuple(checked.items()), _differentiable(spec, dtype)
        )
        return compiled(data, *arrays)

    return call_with_tables if spec.several_tables else call


_FORMS = """

A table may be a jax.Array (of the op's table dtype) or a Python or NumPy sequence (a static
table); each of several in either form. Raises ValueError for bad input when traced, naming the
argument.
"""


def load_library(path: str, descriptions: Mapping[str, ModuleType]) -> ModuleType:
    """The ops of an op library of one's own, built on constmem (constmem_add_jax_op_library).

    Registers each op's FFI handlers from the library's registry and returns a module with a
    function per op, made from `descriptions` (each op's Python description, by name), as this
    package has for constmem's own.
    """
    ops, described = register_library(path, descriptions)
    module = _binding.namespace(
        path, ops, described, _make_call, doc_suffix=_FORMS, arrays=_arrays_of(ops)
    )
    _libraries.add_library_functions(module, "jax", path, ops)
    return module


def _arrays_of(ops: Mapping[str, OpSpec]):
    """The array namespace F of each op of `ops`, by name (for the functions built on them)."""
    return lambda name: JaxArrays(ops[name], {})


_OWN = _binding.namespace(
    __name__,
    OPS,
    {n: _DESCRIPTIONS[s.target] for n, s in OPS.items()},
    _make_call,
    doc_suffix=_FORMS,
    arrays=_arrays_of(OPS),
)
globals().update({name: getattr(_OWN, name) for name in _OWN.__all__})
__all__ = sorted(
    [
        "library_path",
        "load_library",
        "placement_of",
        "table_placements",
        "upload_stats",
        *_OWN.__all__,
    ]
)
