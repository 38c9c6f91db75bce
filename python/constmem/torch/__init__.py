# SPDX-License-Identifier: Apache-2.0
"""constmem's ops for PyTorch: `torch.ops.constmem.*` and typed wrappers.

    import torch
    import constmem.torch as cm

    y = cm.polyval([0.5, -1.0, 2.0], x)          # a static table: uploaded once per device
    y = cm.polyval(torch.tensor(c, device=x.device), x)   # a tensor table: read or copied per call

A table given as a Python or NumPy sequence is part of the op's schema (`*_static`), fixed per
call site as a TensorFlow attr is; a tensor table is an ordinary input, on the data's device (read
in place or copied into constant memory) or on the CPU (staged, so the caller may reuse it at
once). Every op runs on the CPU and on CUDA tensors, on `torch.cuda.current_stream()`, traces
under `torch.compile(fullgraph=True)` and differentiates as the TensorFlow op does.

The ops are safe to capture into CUDA graphs (`torch.cuda.graph`,
`torch.compile(mode="reduce-overhead")`): a CUDA tensor table is read at every replay as it is
then, as any other input of the graph; a CPU tensor or static table is part of the graph, as its
value at capture.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Literal

import numpy as np
import torch

from constmem import _libraries
from constmem.torch._library import (
    LIBRARY_PATH,
    MAX_COEFFICIENTS,
    MAX_KNOTS,
    MAX_TABLE_SIZE,
    MAX_TAPS,
)

upload_stats, library_path = _libraries.accessors("torch", LIBRARY_PATH)

TableLike = torch.Tensor | np.ndarray | Sequence[float]
Padding = Literal["SAME", "VALID"]


_below_autograd = torch._C._AutoDispatchBelowAutograd
_is_compiling = torch.compiler.is_compiling


def _call(op, *args):
    """op(*args), below the autograd key when no gradient can flow.

    The autograd formula is Python, and entering it costs more than the rest of a small call.
    """
    if _is_compiling() or (
        torch.is_grad_enabled()
        and any(a.requires_grad for a in args if isinstance(a, torch.Tensor))
    ):
        return op(*args)
    with _below_autograd():
        return op(*args)


def _static_values(table: object, name: str, kind: type) -> list:
    """A static table as the schema's list, checked here so that the error names the argument.

    Plain Python, which torch.compile traces: values of `kind` (numbers.Integral or numbers.Real),
    a NumPy array converted first. The C++ kernel rounds floats to the data's dtype.
    """
    if isinstance(table, np.ndarray):
        if table.ndim != 1:
            raise ValueError(f"{name} must be a vector (rank 1); got shape {table.shape}")
        table = table.tolist()
    values = list(table)
    for v in values:
        if not isinstance(v, kind) or isinstance(v, bool):
            expected = "integers that fit int32" if kind is numbers.Integral else "real numbers"
            raise ValueError(f"{name} must be {expected}; got {v!r}")
    return [int(v) for v in values] if kind is numbers.Integral else [float(v) for v in values]


def frobulate(data: torch.Tensor, table: torch.Tensor | Sequence[int]) -> torch.Tensor:
    """`(((data + table[0]) + table[1]) + ... + table[n-1])`, left to right in data's dtype.

    data: float32 or float64, any shape. table: 1 to 16,384 integers that fit int32, as an int32
    tensor or a sequence. Bitwise equal to `constmem.tensorflow.frobulate`, on the CPU and GPU.
    The gradient with respect to data is the incoming gradient.
    """
    if isinstance(table, torch.Tensor):
        return _call(torch.ops.constmem.frobulate.default, data, table)
    values = _static_values(table, "table", numbers.Integral)
    return _call(torch.ops.constmem.frobulate_static.default, data, values)


def polyval(coeffs: TableLike, x: torch.Tensor) -> torch.Tensor:
    """Evaluates `coeffs` (highest degree first, as `np.polyval`) at every x by Horner's rule.

    One fused multiply-add per step, so bitwise equal to `constmem.tensorflow.polyval` on the CPU
    and GPU. coeffs: 1 to 4,096 values (a tensor of x's dtype, or a sequence converted to it).
    Gradients flow to x and to a tensor `coeffs`.
    """
    if isinstance(coeffs, torch.Tensor):
        return _call(torch.ops.constmem.polyval.default, coeffs, x)
    values = _static_values(coeffs, "coeffs", numbers.Real)
    return _call(torch.ops.constmem.polyval_static.default, values, x)


def fir_filter(x: torch.Tensor, taps: TableLike, *, padding: Padding = "SAME") -> torch.Tensor:
    """Filters every row of x (its last axis) with `taps`, as a correlation (`np.correlate`).

    padding "SAME" keeps the length ((k - 1) // 2 zeros before, TensorFlow's rule), "VALID" keeps
    n - k + 1 outputs. taps: 1 to 2,048 values. Bitwise equal to `constmem.tensorflow.fir_filter`.
    Gradients flow to x and to a tensor `taps`.
    """
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"padding must be 'SAME' or 'VALID'; got {padding!r}")
    if isinstance(taps, torch.Tensor):
        return _call(torch.ops.constmem.fir_filter.default, x, taps, padding)
    values = _static_values(taps, "taps", numbers.Real)
    return _call(torch.ops.constmem.fir_filter_static.default, x, values, padding)


def interpolate(x: torch.Tensor, knots: TableLike, lo: float, hi: float) -> torch.Tensor:
    """Interpolates linearly into `knots`, n values at n equally spaced points over [lo, hi].

    `np.interp(x, np.linspace(lo, hi, n), knots)`, clamped outside [lo, hi], NaN for NaN, computed
    as `constmem.tensorflow.interpolate` does and bitwise equal to it on the CPU and GPU. knots: 2
    to 16,384 values (a tensor of x's dtype, or a sequence converted to it); lo < hi, finite. On a
    GPU every element reads the knots at its own index: they are staged into each block's shared
    memory or read from global memory. Gradients flow to x and to a tensor `knots`.
    """
    lo, hi = float(lo), float(hi)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"the range [lo, hi] must be finite with lo < hi; got [{lo}, {hi}]")
    if isinstance(knots, torch.Tensor):
        return _call(torch.ops.constmem.interpolate.default, x, knots, lo, hi)
    values = _static_values(knots, "knots", numbers.Real)
    return _call(torch.ops.constmem.interpolate_static.default, x, values, lo, hi)


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
