# SPDX-License-Identifier: Apache-2.0
"""The ops' schemas, fake kernels and autograd from the op library's registry, then its kernels.

The C++ library registers only kernels (CompositeExplicitAutograd: one for CPU and CUDA tensors),
made from each op's description. Everything PyTorch needs to trace, compile and differentiate the
ops is made here from the same op registry and the ops' Python descriptions (constmem.ops):
`name` takes a tensor table, `name_static` a list that is part of the schema.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

import numpy as np
import torch

from constmem import _binding, _libraries, _registry
from constmem import ops as descriptions
from constmem._polyval import coefficient_gradient_blocks
from constmem._registry import OpSpec
from constmem.ops._functions import OperatorBits
from constmem.torch import _sharding

_MINIMUM_TORCH = (2, 10)
_SCHEMA_TYPES = {"choice": "str", "float64": "float", "int64": "int", "dtype": "str"}
_DTYPES = {
    torch.float32: "float32",
    torch.float64: "float64",
    torch.int32: "int32",
    torch.uint8: "uint8",
}
_TORCH_DTYPES = {name: dtype for dtype, name in _DTYPES.items()}


def dtype_name(dtype: torch.dtype) -> str:
    """A dtype as the error messages name it: float32, not torch.float32."""
    return _DTYPES.get(dtype, str(dtype).removeprefix("torch."))


def schema(spec: OpSpec, static: bool) -> str:
    """The op's schema: (data, each table in the op's order, attributes...) -> result.

    An op with several outputs returns a tuple of them, each named: -> (Tensor codes, Tensor
    absmax).
    """
    tables = "".join(
        f", {('int[]' if t.int32 else 'float[]') if static else 'Tensor'} {t.name}"
        for t in spec.tables
    )
    attrs = "".join(f", {_SCHEMA_TYPES[a.kind]} {a.name}" for a in spec.attrs)
    result = "Tensor"
    if spec.several_outputs:
        result = "(" + ", ".join(f"Tensor {name}" for name in spec.output_names) + ")"
    return f"(Tensor {spec.data}{tables}{attrs}) -> {result}"


def check_data(spec: OpSpec, data: torch.Tensor) -> None:
    """Data the op takes: float32 (float64, uint8) on the CPU, a GPU or the meta device."""
    if dtype_name(data.dtype) not in spec.data_dtypes():
        raise ValueError(_registry.data_dtype_message(spec, dtype_name(data.dtype)))


def table_dtype(spec: OpSpec, data_dtype: torch.dtype) -> torch.dtype:
    """The dtype of a tensor table for data of `data_dtype`: int32, or the data's compute dtype."""
    return _TORCH_DTYPES[spec.table_dtype(dtype_name(data_dtype))]


def check_table(spec: OpSpec, table: torch.Tensor, data: torch.Tensor) -> None:
    """A tensor table the op takes: a vector of the op's dtype and size.

    On the host or the data's device: a table on any other device, the meta device among them, is
    refused.
    """
    if table.dim() != 1:
        raise ValueError(f"{spec.table} must be a vector (rank 1); got shape {tuple(table.shape)}")
    _registry.check_size(spec, table.shape[0])
    expected = table_dtype(spec, data.dtype)
    if table.dtype != expected:
        raise ValueError(
            _registry.table_dtype_message(spec, dtype_name(data.dtype), dtype_name(table.dtype))
        )
    if table.device.type != "cpu" and table.device != data.device:
        raise ValueError(_registry.device_message(spec, str(table.device), str(data.device)))


def check_torch_version() -> None:
    """Refuses a torch older than the stable ABI the op libraries are built on."""
    version = tuple(int(part) for part in torch.__version__.split(".")[:2])
    if version < _MINIMUM_TORCH:
        raise ImportError(
            "constmem.torch needs torch 2.10 or newer (its stable ABI); "
            f"this is {torch.__version__}"
        )


def register_library(
    path: str, described: dict[str, ModuleType] | None = None
) -> tuple[dict[str, OpSpec], dict[str, ModuleType]]:
    """Defines the schemas, fake kernels and autograd of every op the library lists; loads it.

    `described`: each op's Python description by name (default: constmem's).
    """
    check_torch_version()
    ops = _registry.read_registry(path)
    described = _binding.descriptions_of(ops, described)
    checker = _registry.call_checker(path)
    for spec in ops.values():
        for static in (False, True):
            name = f"{spec.library}::{spec.name}" + ("_static" if static else "")
            torch.library.define(name, schema(spec, static))
            torch.library.register_fake(name, _fake(spec, described[spec.name], static, checker))
            torch.library.register_autograd(
                name, _backward(spec, described[spec.name], static), setup_context=_save_inputs
            )
        if not spec.several_outputs:  # DTensor's strategies here give one output
            _sharding.register(spec, described[spec.name])
    torch.ops.load_library(path)
    return ops, described


# The op libraries of one's own loaded in this process: each module load_library made, as an
# attribute of its own (library_0, ...) that torch.compile reads when it meets it (a dictionary's
# entries it reads as of its first look, which misses a library loaded later in the same trace);
# and by real path, the attribute's name and the descriptions the module was made from.
_LOADED = ModuleType("constmem.torch.loaded_libraries")
_LOADED_BY_PATH: dict[str, tuple[str, dict[str, ModuleType]]] = {}


def loads_once(
    load: Callable[[str, dict[str, ModuleType]], ModuleType],
) -> Callable[[str, Mapping[str, ModuleType]], ModuleType]:
    """`load(path, descriptions)` as load_library: once a library, and first called anywhere.

    Loading defines the ops' schemas and opens the library, which torch.compile cannot trace. The
    load runs as a constant of the trace (torch.compiler.assume_constant_result): eagerly, when
    torch.compile first meets it, which is also when the ops it defines are needed. What the trace
    sees is a lookup of the loaded module, so a function that loads its library on its first call
    compiles with fullgraph=True, before or after the load, and every later call, compiled or not,
    gets the same module. The same library with other descriptions is a ValueError: its ops are
    defined already.
    """

    @torch.compiler.assume_constant_result
    def load_eagerly(path: str, descriptions: dict[str, ModuleType]) -> str:
        key = os.path.realpath(path)
        if key not in _LOADED_BY_PATH:
            name = f"library_{len(_LOADED_BY_PATH)}"
            setattr(_LOADED, name, load(path, descriptions))
            _LOADED_BY_PATH[key] = (name, descriptions)
        elif _LOADED_BY_PATH[key][1] != descriptions:
            raise ValueError(
                f"{path} is loaded already, with the descriptions of "
                f"{', '.join(sorted(_LOADED_BY_PATH[key][1]))}; a library loads once a process"
            )
        return _LOADED_BY_PATH[key][0]

    @functools.wraps(load)
    def load_library(path: str, descriptions: Mapping[str, ModuleType]) -> ModuleType:
        return getattr(_LOADED, load_eagerly(path, dict(descriptions)))

    return load_library


def _fake(spec: OpSpec, description: ModuleType, static: bool, checker):
    """The op's fake kernel: its checks and its result's shape, for meta tensors and tracing.

    Where the shape is concrete (a meta tensor called directly), the library's own checks
    (`checker`, the C++ description's) answer, as the kernel would: attributes out of range among
    them, which the Python description's shape assumes checked.
    """
    table_specs = tuple(spec.table_spec(i) for i in range(len(spec.tables)))
    count = len(table_specs)

    def fake(data, *args):
        check_data(spec, data)
        sizes = []
        for table_spec, table in zip(table_specs, args[:count], strict=True):
            if static:
                _registry.check_size(table_spec, len(table))
                sizes.append(len(table))
            else:
                check_table(table_spec, table, data)
                sizes.append(table.shape[0])
        attrs = {a.name: v for a, v in zip(spec.attrs, args[count:], strict=True)}
        if checker is not None and all(isinstance(d, int) for d in data.shape):
            shape = checker(spec, dtype_name(data.dtype), tuple(data.shape), tuple(sizes), attrs)
        else:
            shape = descriptions.output_shape(
                description, data.shape, tuple(sizes), attrs, torch.sym_max
            )
        dtypes = spec.output_dtypes_of(dtype_name(data.dtype), attrs)
        if spec.several_outputs:
            return tuple(
                data.new_empty(one, dtype=getattr(torch, d))
                for one, d in zip(shape, dtypes, strict=True)
            )
        dtype = getattr(torch, dtypes[0])
        if spec.elementwise:
            return torch.empty_like(data, dtype=dtype, memory_format=torch.contiguous_format)
        return data.new_empty(shape, dtype=dtype)

    return fake


def _save_inputs(ctx, inputs, output):
    ctx.inputs = inputs
    ctx.save_for_backward(*(t for t in inputs if isinstance(t, torch.Tensor)))


def _backward(spec: OpSpec, description: ModuleType, static: bool):
    """The op's autograd formula: its description's backward over PyTorch's tensors.

    One gradient per table, none to an int32 table or a static one. An op with several outputs
    gets one gradient per output, None for an integer one (PyTorch's own integer outputs take no
    gradient either).
    """
    table_specs = tuple(spec.table_spec(i) for i in range(len(spec.tables)))
    count = len(table_specs)
    no_attr_grads = [None] * len(spec.attrs)

    def backward(ctx, *grads):
        if static:
            (data,) = ctx.saved_tensors
            tables = ctx.inputs[1 : 1 + count]
        else:
            data, *tables = ctx.saved_tensors
        # Integer data take no gradient; their tables do where the output is a float.
        integer = not data.is_floating_point()
        if integer and not spec.float_output:
            return None, *([None] * count), *no_attr_grads
        attrs = {a.name: v for a, v in zip(spec.attrs, ctx.inputs[1 + count :], strict=True)}
        floats = spec.float_outputs(dtype_name(data.dtype), attrs)
        grad = tuple(g if f else None for g, f in zip(grads, floats, strict=True))
        need = [
            not static and not s.int32_table and ctx.needs_input_grad[1 + i]
            for i, s in enumerate(table_specs)
        ]

        def gradients(data, tables, grad):
            if static:
                tables = tuple(
                    torch.tensor(values, dtype=table_dtype(s, data.dtype), device=data.device)
                    for s, values in zip(table_specs, tables, strict=True)
                )
            if data.numel() == 0:  # no output depends on a table (an empty shard among them)
                return (
                    torch.zeros_like(data) if ctx.needs_input_grad[0] else None,
                    [torch.zeros_like(t) if n else None for t, n in zip(tables, need, strict=True)],
                )
            narrow = data.dtype in (torch.float16, torch.bfloat16)
            if narrow:  # computed in float32: the float32 call's gradients, the data's cast back
                dtype, data = data.dtype, data.float()
                grad = tuple(None if g is None else g.float() for g in grad)
            need_data = ctx.needs_input_grad[0] and not integer
            grad_data, *grad_tables = description.backward(
                TorchArrays(spec, attrs), *grad, data, *tables, attrs, need_data, *need
            )
            if narrow and grad_data is not None:
                grad_data = grad_data.to(dtype)
            grad_tables = [
                g.to(t.device) if n and g is not None else None
                for g, t, n in zip(grad_tables, tables, need, strict=True)
            ]
            return grad_data, grad_tables

        if _sharding.is_dtensor(data):
            grad_data, grad_tables = _sharding.sharded_gradients(
                lambda d, t, g: gradients(d, t, (g,)),
                description,
                data,
                tuple(tables),
                grad[0],
                attrs,
            )
        else:
            grad_data, grad_tables = gradients(data, tables, grad)
        return grad_data, *grad_tables, *no_attr_grads

    return backward


class TorchArrays(OperatorBits):
    """The array namespace F of the ops' backward formulas (constmem.ops.ARRAY_API), in PyTorch."""

    def __init__(self, spec: OpSpec, attrs: dict[str, Any]) -> None:
        self._op = getattr(getattr(torch.ops, spec.library), spec.name).default
        self._spec = spec
        self._attrs = attrs

    def op(self, data, *tables, **attrs):
        """The op with tensor tables, each of several in the op's order."""
        merged = {**self._attrs, **attrs}
        return self._op(
            data, *(t.contiguous() for t in tables), *(merged[a.name] for a in self._spec.attrs)
        )

    def __getattr__(self, name):
        """Any other name is torch's (the array API standard's names: exp, tanh, sum, ...)."""
        return getattr(torch, name)

    @staticmethod
    def sigmoid(t):
        return torch.sigmoid(t)

    @staticmethod
    def rfft(t, n):
        return torch.fft.rfft(t, n, dim=-1)

    @staticmethod
    def irfft(t, n):
        return torch.fft.irfft(t, n, dim=-1)

    def compiled(self, fn, *static):
        """Fn as it is: eager calls run op by op, and torch.compile or tf.function compile them."""
        return lambda *arrays: fn(self, *arrays, *static)

    @staticmethod
    def on_gpu(t):
        return t.device.type == "cuda"

    @staticmethod
    def length(table):
        return table.shape[0]

    @staticmethod
    def size(t, axis):
        return t.shape[axis]

    @staticmethod
    def scalar(value, like):
        return torch.tensor(value, dtype=like.dtype, device=like.device)

    @staticmethod
    def cast(t, like):
        if isinstance(t, torch.Tensor):
            return t.to(like.dtype)
        return torch.tensor(t, dtype=like.dtype, device=like.device)

    @staticmethod
    def zeros(n, like):
        return torch.zeros(n, dtype=like.dtype, device=like.device)

    @staticmethod
    def arange(start, stop, step, like):
        return torch.arange(start, stop, step, dtype=like.dtype, device=like.device)

    @staticmethod
    def concat(vectors, axis=0):
        return torch.cat(vectors, dim=axis)

    @staticmethod
    def flip(vector):
        return vector.flip(0)

    @staticmethod
    def where(condition, a, b):
        return torch.where(condition, a, b)

    @staticmethod
    def minimum(t, number):
        return torch.clamp(t, max=number)

    @staticmethod
    def maximum(t, number):
        return torch.clamp(t, min=number)

    @staticmethod
    def round(t):
        return torch.round(t)

    @staticmethod
    def floor_int(t):
        return torch.floor(t).long()

    @staticmethod
    def gather(vector, indices):
        return vector.to(indices.device)[indices]

    @staticmethod
    def scatter_add(n, indices, values, like):
        sums = torch.zeros(n, dtype=values.dtype, device=values.device)
        return sums.index_add_(0, indices.reshape(-1), values.reshape(-1))

    @staticmethod
    def pad_last(t, before, after):
        return torch.nn.functional.pad(t, (before, after)) if before or after else t

    @staticmethod
    def power_sums(x, g, n):
        """sum(g * x**k) for k < n, in blocks of powers: at most [elements, 16] at once."""
        x, g = x.reshape(-1, 1), g.reshape(-1, 1)
        blocks, per_block = coefficient_gradient_blocks(n)
        exponents = torch.arange(blocks * per_block, dtype=x.dtype, device=x.device)
        sums = [
            (x ** exponents[m * per_block : (m + 1) * per_block] * g).sum(0) for m in range(blocks)
        ]
        return torch.cat(sums)[:n]

    @staticmethod
    def correlate_rows(padded, g):
        """A correlation of the rows with the gradient's.

        The rows are channels that the convolution sums over: no intermediate k times the input.
        """
        m = g.shape[-1]
        k = padded.shape[-1] - m + 1
        if g.numel() == 0:
            return torch.zeros(k, dtype=g.dtype, device=g.device)
        rows = padded.reshape(1, -1, padded.shape[-1])
        return torch.nn.functional.conv1d(rows, g.reshape(1, -1, m)).reshape(k)

    @staticmethod
    def row_sums(t):
        return t.reshape(-1, t.shape[-1]).sum(-1)

    @staticmethod
    def pad_axis(t, axis, before, after):
        if not before and not after:
            return t
        axis = axis - t.dim() if axis >= 0 else axis
        return torch.nn.functional.pad(t, (0, 0) * (-axis - 1) + (before, after))

    @staticmethod
    def take(t, indices, axis):
        if isinstance(indices, np.ndarray):
            # int64 also where made from symbolic sizes (torch.compile's dynamic shapes: the sizes
            # of this trace, which torch.compile then guards on); no test of the dtype, which
            # torch.compile cannot trace.
            indices = indices.astype(np.int64)
        return t.index_select(axis, torch.as_tensor(indices, dtype=torch.long, device=t.device))

    @staticmethod
    def reshape(t, shape):
        return t.reshape(shape)

    @staticmethod
    def astype(value, dtype, like=None):
        device = None if like is None else like.device
        return torch.as_tensor(value, dtype=getattr(torch, dtype), device=device)

    @staticmethod
    def bitcast(t, dtype):
        return t.view(getattr(torch, dtype))

    @staticmethod
    def stop_gradient(t):
        return t.detach()


LIBRARY_PATH = _libraries.library_path("torch")
_libraries.check_framework_version("torch", None)
OPS, DESCRIPTIONS = register_library(LIBRARY_PATH)
