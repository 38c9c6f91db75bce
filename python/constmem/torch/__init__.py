# SPDX-License-Identifier: Apache-2.0
"""constmem's ops for PyTorch: `torch.ops.constmem.*` and a function per op.

    import torch
    import constmem.torch as cm

    y = cm.polyval([0.5, -1.0, 2.0], x)          # a static table: checked once, then cached
    y = cm.polyval(torch.tensor(c, device=x.device), x)   # a tensor table: read or copied per call

A table given as a Python or NumPy sequence is a static table, fixed per call site as a TensorFlow
attr is: checked once per value and kept as a host tensor, which eager calls pass as a CPU table
(by value when small, else staged), and under torch.compile part of the op's schema
(`<op>_static`), a constant of the graph; a tensor table is an ordinary input, on the data's
device (read in place or copied into constant memory) or on the CPU (staged, so the caller may
reuse it at once). A tensor table must have the op's table dtype exactly (int32, or the data's
dtype); a sequence is converted. An op with several tables (weight and bias) takes each as a
parameter of its own, each in any of these forms. Every op runs on the CPU and on CUDA tensors, on
`torch.cuda.current_stream()`, traces under `torch.compile(fullgraph=True)` and differentiates as
the TensorFlow op does. Bad input raises ValueError naming the argument, what it must be and what
it was.

The ops are safe to capture into CUDA graphs (`torch.cuda.graph`,
`torch.compile(mode="reduce-overhead")`): a CUDA tensor table is read at every replay as it is
then, as any other input of the graph; a CPU tensor or static table is part of the graph, as its
value at capture.

The functions, their limits (MAX_TAPS, ...) and the `torch.ops` schemas are made from the op
library's registry and the ops' descriptions (constmem.ops): every op of the build is here.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Mapping
from types import ModuleType
from typing import Any

import numpy as np
import torch

from constmem import _binding, _libraries, _registry
from constmem.torch._library import (
    DESCRIPTIONS,
    LIBRARY_PATH,
    OPS,
    TorchArrays,
    check_table,
    dtype_name,
    loads_once,
    register_library,
)
from constmem.torch._sharding import is_dtensor, mixed_message, replicated_like

upload_stats, library_path = _libraries.accessors("torch", LIBRARY_PATH)
table_placements = _libraries.placements_function(upload_stats)
placement_of = _libraries.placement_function(LIBRARY_PATH, OPS)

_below_autograd = torch._C._AutoDispatchBelowAutograd
_is_compiling = torch.compiler.is_compiling
_STATIC_CACHE_SIZE = 256
_static_cache: OrderedDict[Any, tuple] = OrderedDict()  # key -> (types, tensor)
# A tuple of Python numbers cannot change: the very same tuple again (a call site's constant, or
# gaussian_blur's cached taps) finds its tensor by identity, without hashing its values. A list
# can: the same list finds it only while it holds the very same number objects (the same values
# of the same types), which costs a pass over it but no hashing.
# (id(table), name) -> (table, dtype, tensor, the list's items or None); holding the table keeps
# its id from being reused.
_static_by_identity: dict[int, tuple] = {}
_NUMBER_TYPES = frozenset((float, int))


def _static_key(name: str, table: Any, dtype: torch.dtype) -> tuple:
    """(a hashable key of a static table named `name`, the values' types), or (None, None).

    `name` tells apart the ops and an op's several tables, whose rules differ. A cached table is
    reused only for values of the same types as well: 1 == 1.0, but an int32 table takes only the
    first. The types are compared, not hashed, which costs less.
    """
    if isinstance(table, np.ndarray):
        return (name, dtype, table.dtype.str, table.shape, table.tobytes()), None
    try:
        values = tuple(table)
    except TypeError:
        return None, None
    return (name, dtype, values), tuple(map(type, values))


def _static_table(
    spec: _registry.OpSpec, table: Any, dtype: torch.dtype, name: str
) -> torch.Tensor:
    """A static table as a host tensor of the op's table dtype, checked and made once per value.

    A table fixed per call site comes again and again, and a host tensor reaches the kernel
    without the dispatcher converting a list of its entries at every call. `spec`: the op's, or
    for one of several tables spec.table_spec(i); `name`: its cache key's (the op's, or "op.table").
    """
    kind = type(table)
    if kind is tuple or kind is list:
        hit = _static_by_identity.get((id(table), name))
        if (
            hit is not None
            and hit[0] is table
            and hit[1] == dtype
            and (
                hit[3] is None
                or (len(table) == len(hit[3]) and all(map(operator.is_, table, hit[3])))
            )
        ):
            return hit[2]
    key, types = _static_key(name, table, dtype)
    if key is not None:
        try:
            cached = _static_cache.get(key)
        except TypeError:  # unhashable values: checked below, which names them
            cached = key = None
        if cached is not None and cached[0] == types:
            _remember_by_identity(table, name, dtype, types, cached[1])
            return cached[1]
    values = _registry.static_list(spec, table)
    table_dtype = getattr(torch, spec.table_dtype(dtype_name(dtype)))
    tensor = torch.tensor(values, dtype=table_dtype)  # rounded to nearest, as the kernel rounds
    if key is not None:
        _static_cache[key] = (types, tensor)
        if len(_static_cache) > _STATIC_CACHE_SIZE:
            _static_cache.popitem(last=False)
        _remember_by_identity(table, name, dtype, types, tensor)
    return tensor


def _remember_by_identity(table: Any, name: str, dtype: torch.dtype, types: tuple, tensor) -> None:
    """Keeps `tensor` for the identity of `table` where it is a tuple or list of Python numbers."""
    kind = type(table)
    if (kind is tuple or kind is list) and _NUMBER_TYPES.issuperset(types):
        if len(_static_by_identity) >= _STATIC_CACHE_SIZE:
            _static_by_identity.clear()
        items = list(table) if kind is list else None
        _static_by_identity[id(table), name] = (table, dtype, tensor, items)


def _checked_attrs(spec: _registry.OpSpec, check, attrs: tuple, data: torch.Tensor) -> tuple:
    """The op's attributes, checked by kind and by the op's description, in the data's dtype."""
    if not isinstance(data, torch.Tensor):
        raise ValueError(f"{spec.data} must be a torch.Tensor; got {type(data).__name__}")
    given = {a.name: v for a, v in zip(spec.attrs, attrs, strict=True)}
    checked = _registry.attr_values(spec, given, dtype_name(data.dtype))
    if check is not None:
        check(checked)
    return tuple(checked.values())


# Attribute values of these exact types are immutable, so a check of them holds for every later
# call with equal values of the same types (a tensor or an array could change in place).
_IMMUTABLE_ATTR_TYPES = frozenset((str, int, float))
_ATTR_CACHE_SIZE = 256


def _attr_checker(spec: _registry.OpSpec, check):
    """_checked_attrs for `spec`'s op, remembering the attribute values that passed.

    A call site passes the same attributes again and again; their check in Python costs more than
    the rest of a small call. Under torch.compile the check runs as it is, traced once.
    """
    passed: dict[Any, tuple] = {}

    def checked_attrs(attrs: tuple, data: torch.Tensor) -> tuple:
        if _is_compiling() or not isinstance(data, torch.Tensor):
            return _checked_attrs(spec, check, attrs, data)
        types = tuple(map(type, attrs))
        key = (data.dtype, attrs, types)
        try:
            values = passed.get(key)
        except TypeError:  # an unhashable value: the check below names it
            values = key = None
        if values is None:
            values = _checked_attrs(spec, check, attrs, data)
            if key is not None and _IMMUTABLE_ATTR_TYPES.issuperset(types):
                if len(passed) >= _ATTR_CACHE_SIZE:
                    passed.clear()
                passed[key] = values
        return values

    return checked_attrs


# Each registered op library's own checks of a call (constmem._registry.call_checker), by the
# op's FFI-style target ("constmem_fir_filter").
_CHECKERS: dict[str, _registry.CallChecker | None] = {}


def _register_checker(path: str, ops: Mapping[str, _registry.OpSpec]) -> None:
    checker = _registry.call_checker(path)
    _CHECKERS.update({spec.target: checker for spec in ops.values()})


def _refusal(spec: _registry.OpSpec, data: torch.Tensor, table: Any, attrs: tuple):
    """The ValueError the call's checks give, or None where they pass.

    Newer PyTorch releases (2.15) turn every exception of a stable-ABI kernel into a RuntimeError,
    the kernel's refusals of bad input among them. They are ValueErrors in the kernel's words on
    every release: the checks run again here, for a call that failed, and name what it refused.
    `table`: the table, or the tuple of an op's several tables in its order.
    """
    dtype = dtype_name(data.dtype)
    if dtype not in spec.data_dtypes():
        return ValueError(_registry.data_dtype_message(spec, dtype))
    tables = table if spec.several_tables else (table,)
    sizes = []
    for i, t in enumerate(tables):
        if isinstance(t, torch.Tensor):
            if is_dtensor(t) != is_dtensor(data):  # DTensor refuses the mix, in its own words
                return ValueError(mixed_message(spec.table_spec(i).table, spec.data, data))
            try:
                check_table(spec.table_spec(i), t, data)
            except ValueError as error:
                return error
            sizes.append(t.shape[0])
        else:
            sizes.append(len(t))
    checker = _CHECKERS.get(spec.target)
    if checker is None:
        return None
    named = {a.name: v for a, v in zip(spec.attrs, attrs, strict=True)}
    try:
        checker(spec, dtype, tuple(data.shape), tuple(sizes), named)
    except ValueError as error:
        return error
    return None


def _make_call(spec: _registry.OpSpec, description: ModuleType):
    """The function that checks a call of the op and runs it with a tensor or static table."""
    checked_attrs = _attr_checker(spec, getattr(description, "check", None))
    library = getattr(torch.ops, spec.library)
    tensor_op = getattr(library, spec.name).default
    # Below the autograd key, the overload's C++ entry itself: one Python frame less.
    run_below_autograd = tensor_op._op
    static_op = getattr(library, spec.name + "_static").default

    def dispatch(spec: _registry.OpSpec, data: torch.Tensor, table: Any, attrs: tuple):
        """The op on `data` with a tensor table, or a static one (a sequence), checked attributes.

        Eagerly and with no gradient to flow, the op runs below the autograd key (its formula is
        Python, whose entry costs more than a small call) and its kernel makes the checks, in the
        words of the fake kernel's, which torch.compile and meta tensors meet.
        """
        if isinstance(table, torch.Tensor):
            # Gradients flow through float data, and to the tables where the output is a float.
            if _is_compiling() or (
                torch.is_grad_enabled()
                and (data.requires_grad or table.requires_grad)
                and (data.is_floating_point() or spec.float_output)
            ):
                return tensor_op(data, table, *attrs)
            with _below_autograd():
                return run_below_autograd(data, table, *attrs)
        if _is_compiling():
            if isinstance(table, np.ndarray):  # traced as a tensor: a host table of the graph
                return tensor_op(data, _traced_host_table(spec, table, data), *attrs)
            # The schema's list: a constant of the traced graph.
            return static_op(data, _registry.static_list(spec, table), *attrs)
        # Eagerly, the table as a cached host tensor: the kernel copies it into its own staging
        # (by value when small), and the graph of a capture keeps its own copy, as of a list.
        table = _static_table(spec, table, data.dtype, spec.name)
        if type(data) is not torch.Tensor:  # DTensor data: the table replicated beside it
            table = replicated_like(table, data)
        if data.requires_grad and torch.is_grad_enabled():
            return tensor_op(data, table, *attrs)
        with _below_autograd():
            return run_below_autograd(data, table, *attrs)

    if spec.several_tables:
        dispatch = _several_tables_dispatch(spec, tensor_op, static_op)

    def call(spec: _registry.OpSpec, data: torch.Tensor, table: Any, attrs: tuple):
        """The op on `data` with a tensor or static table; bad input is a ValueError.

        An op with several tables gets the tuple of them, each in any form.
        """
        if attrs:
            attrs = checked_attrs(attrs, data)
        elif not isinstance(data, torch.Tensor):
            raise ValueError(f"{spec.data} must be a torch.Tensor; got {type(data).__name__}")
        try:
            return dispatch(spec, data, table, attrs)
        except RuntimeError as error:
            if _is_compiling():
                raise
            refusal = _refusal(spec, data, table, attrs)
            if refusal is None:
                raise
            raise refusal from error

    return call


def _traced_host_table(spec: _registry.OpSpec, table: Any, data: torch.Tensor) -> torch.Tensor:
    """A static table as a host tensor made in the graph torch.compile traces.

    NumPy's arrays are tensors there, whose values the trace cannot list; a list is checked first.
    """
    dtype = getattr(torch, spec.table_dtype(dtype_name(data.dtype)))
    if isinstance(table, np.ndarray):
        if table.ndim != 1:
            raise ValueError(f"{spec.table} must be a vector (rank 1); got shape {table.shape}")
        _registry.check_size(spec, table.shape[0])
        return replicated_like(torch.as_tensor(table).to(dtype), data)
    return replicated_like(torch.tensor(_registry.static_list(spec, table), dtype=dtype), data)


def _several_tables_dispatch(spec: _registry.OpSpec, tensor_op, static_op):
    """dispatch() of an op with several tables, given as a tuple in the op's order.

    Each table may take any form. All static: the `_static` op under torch.compile (lists, constants
    of the graph), else the tensor op with each as a cached host tensor, as for one static table.
    Any tensor among them: the tensor op, with the static ones as host tensors (made in the graph
    under torch.compile, where the cache is not traced).
    """
    table_specs = tuple(spec.table_spec(i) for i in range(len(spec.tables)))
    keys = tuple(f"{spec.name}.{s.table}" for s in table_specs)
    run_below_autograd = tensor_op._op

    def as_tensor(i: int, table: Any, data: torch.Tensor, compiling: bool) -> torch.Tensor:
        """Static table i as a host tensor (made in the graph under torch.compile)."""
        if compiling:
            return _traced_host_table(table_specs[i], table, data)
        return replicated_like(_static_table(table_specs[i], table, data.dtype, keys[i]), data)

    def dispatch(spec: _registry.OpSpec, data: torch.Tensor, tables: tuple, attrs: tuple):
        compiling = _is_compiling()
        if compiling and not any(isinstance(t, (torch.Tensor, np.ndarray)) for t in tables):
            lists = [_registry.static_list(s, t) for s, t in zip(table_specs, tables, strict=True)]
            return static_op(data, *lists, *attrs)
        # A plain loop: a generator's frames cost more than the rest of a small eager call.
        tensors = []
        needs_grad = data.requires_grad
        for i, table in enumerate(tables):
            if not isinstance(table, torch.Tensor):
                table = as_tensor(i, table, data, compiling)
            needs_grad = needs_grad or table.requires_grad
            tensors.append(table)
        differentiable = data.is_floating_point() or spec.float_output
        if compiling or (needs_grad and torch.is_grad_enabled() and differentiable):
            return tensor_op(data, *tensors, *attrs)
        with _below_autograd():
            return run_below_autograd(data, *tensors, *attrs)

    return dispatch


_FORMS = """

A table may be a tensor (on the CPU or the data's device, of the op's table dtype) or a Python or
NumPy sequence (a static table). Raises ValueError for bad input, naming the argument.
"""


@loads_once
def load_library(path: str, descriptions: Mapping[str, ModuleType]) -> ModuleType:
    """The ops of an op library of one's own, built on constmem (constmem_add_torch_op_library).

    Defines each op's `torch.ops` schemas, fake kernel and autograd from the library's registry
    and `descriptions` (each op's Python description, by name), loads its kernels and returns a
    module with a function per op, as this package has for constmem's own. A library loads once
    a process: a later call returns the same module, and a first call inside a function that
    torch.compile traces loads it then, without breaking the graph.
    """
    ops, described = register_library(path, dict(descriptions))
    _register_checker(path, ops)
    module = _binding.namespace(
        path, ops, described, _make_call, doc_suffix=_FORMS, arrays=_arrays_of(ops)
    )
    _libraries.add_library_functions(module, "torch", path, ops)
    return module


def _arrays_of(ops: Mapping[str, _registry.OpSpec]):
    """The array namespace F of each op of `ops`, by name (for the functions built on them)."""
    return lambda name: TorchArrays(ops[name], {})


_register_checker(LIBRARY_PATH, OPS)
_OWN = _binding.namespace(
    __name__, OPS, DESCRIPTIONS, _make_call, doc_suffix=_FORMS, arrays=_arrays_of(OPS)
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
