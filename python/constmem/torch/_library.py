# SPDX-License-Identifier: Apache-2.0
"""The ops' schemas, fake kernels and autograd formulas, then the kernels from _constmem_torch.so.

The C++ library registers only kernels (CompositeExplicitAutograd: one for CPU and CUDA tensors);
everything PyTorch needs to trace, compile and differentiate the ops is here.
"""

from __future__ import annotations

import numpy as np
import torch

from constmem import _libraries
from constmem._polyval import coefficient_gradient_blocks

_SCHEMAS = {
    "frobulate": "(Tensor data, Tensor table) -> Tensor",
    "frobulate_static": "(Tensor data, int[] table) -> Tensor",
    "polyval": "(Tensor coeffs, Tensor x) -> Tensor",
    "polyval_static": "(float[] coeffs, Tensor x) -> Tensor",
    "fir_filter": "(Tensor x, Tensor taps, str padding) -> Tensor",
    "fir_filter_static": "(Tensor x, float[] taps, str padding) -> Tensor",
    "interpolate": "(Tensor x, Tensor knots, float lo, float hi) -> Tensor",
    "interpolate_static": "(Tensor x, float[] knots, float lo, float hi) -> Tensor",
}
_MINIMUM_TORCH = (2, 10)


def _load() -> str:
    version = tuple(int(part) for part in torch.__version__.split(".")[:2])
    if version < _MINIMUM_TORCH:
        raise ImportError(
            "constmem.torch needs torch 2.10 or newer (its stable ABI); "
            f"this is {torch.__version__}"
        )
    path = _libraries.library_path("torch")
    _libraries.check_framework_version("torch", None)
    for name, schema in _SCHEMAS.items():
        torch.library.define(f"constmem::{name}", schema)
    torch.ops.load_library(path)
    return path


LIBRARY_PATH = _load()


MAX_TABLE_SIZE, MAX_COEFFICIENTS, MAX_TAPS, MAX_KNOTS = _libraries.op_limits(LIBRARY_PATH)


def _check_float(tensor: torch.Tensor, name: str) -> None:
    if tensor.dtype not in (torch.float32, torch.float64):
        raise ValueError(f"{name} must be float32 or float64; got {tensor.dtype}")


def _fir_outputs(length, taps, padding: str):
    if padding == "SAME":
        return length
    return torch.sym_max(length - taps + 1, 0)


def _elementwise_fake(data_index: int, name: str):
    """The fake kernel of an op whose output is its data's shape and dtype."""

    def fake(*args):
        data = args[data_index]
        _check_float(data, name)
        return torch.empty_like(data, memory_format=torch.contiguous_format)

    return fake


for _op, _data_index, _name in [
    ("frobulate", 0, "data"),
    ("frobulate_static", 0, "data"),
    ("polyval", 1, "x"),
    ("polyval_static", 1, "x"),
    ("interpolate", 0, "x"),
    ("interpolate_static", 0, "x"),
]:
    torch.library.register_fake(f"constmem::{_op}", _elementwise_fake(_data_index, _name))


def _fir_fake(x, k, padding):
    _check_float(x, "x")
    if x.dim() < 1:
        raise ValueError("x must have rank 1 or more (the filter runs along the last axis)")
    return x.new_empty((*x.shape[:-1], _fir_outputs(x.shape[-1], k, padding)))


@torch.library.register_fake("constmem::fir_filter")
def _(x, taps, padding):
    return _fir_fake(x, taps.shape[0], padding)


@torch.library.register_fake("constmem::fir_filter_static")
def _(x, taps, padding):
    return _fir_fake(x, len(taps), padding)


# Gradients: the data's through the same ops; a tensor table's with PyTorch's own operations.


def _frobulate_backward(ctx, grad):
    return grad, None


torch.library.register_autograd("constmem::frobulate", _frobulate_backward)
torch.library.register_autograd("constmem::frobulate_static", _frobulate_backward)


def _save_inputs(ctx, inputs, output):
    ctx.inputs = inputs
    ctx.save_for_backward(*(t for t in inputs if isinstance(t, torch.Tensor)))


def _polyval_backward(ctx, grad):
    coeffs, x = ctx.saved_tensors
    n = coeffs.shape[0]
    if n == 1:
        derivative = torch.zeros_like(coeffs)
    else:
        derivative = coeffs[:-1] * torch.arange(
            n - 1, 0, -1, dtype=coeffs.dtype, device=coeffs.device
        )
    grad_coeffs = grad_x = None
    if ctx.needs_input_grad[1]:
        grad_x = grad * torch.ops.constmem.polyval(derivative, x)
    if ctx.needs_input_grad[0]:
        grad_coeffs = _coeffs_gradient(x.reshape(-1), grad.reshape(-1), n).to(coeffs.device)
    return grad_coeffs, grad_x


def _coeffs_gradient(x: torch.Tensor, grad: torch.Tensor, n: int) -> torch.Tensor:
    """d(sum(grad * y)) / d coeffs[i] = sum(grad * x**(n-1-i)), in blocks of powers."""
    blocks, per_block = coefficient_gradient_blocks(n)
    exponents = torch.arange(blocks * per_block, dtype=x.dtype, device=x.device)
    sums = [
        (
            x.reshape(-1, 1) ** exponents[m * per_block : (m + 1) * per_block] * grad.reshape(-1, 1)
        ).sum(0)
        for m in range(blocks)
    ]
    return torch.cat(sums)[:n].flip(0)


def _polyval_static_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    coeffs = np.asarray(ctx.inputs[0], dtype=_numpy_dtype(x.dtype))
    derivative = np.polyder(coeffs) if coeffs.size > 1 else np.zeros(1, coeffs.dtype)
    return None, grad * torch.ops.constmem.polyval_static(derivative.tolist(), x)


torch.library.register_autograd("constmem::polyval", _polyval_backward, setup_context=_save_inputs)
torch.library.register_autograd(
    "constmem::polyval_static", _polyval_static_backward, setup_context=_save_inputs
)


def _numpy_dtype(dtype: torch.dtype):
    return np.float32 if dtype == torch.float32 else np.float64


def _pad_left(k: int, padding: str) -> int:
    return (k - 1) // 2 if padding == "SAME" else 0


def _fir_x_gradient(grad, x, k, padding):
    """The gradient padded so that filtering it with the taps reversed gives dx (VALID)."""
    pad_left = _pad_left(k, padding)
    before = k - 1 - pad_left
    after = x.shape[-1] - grad.shape[-1] + pad_left
    return torch.nn.functional.pad(grad, (before, after))


def _fir_backward(ctx, grad):
    x, taps = ctx.saved_tensors
    padding = ctx.inputs[2]
    k = taps.shape[0]
    grad_x = grad_taps = None
    if ctx.needs_input_grad[0]:
        padded = _fir_x_gradient(grad, x, k, padding)
        grad_x = torch.ops.constmem.fir_filter(padded, taps.flip(0).contiguous(), "VALID")
    if ctx.needs_input_grad[1]:
        # dtaps[j] = sum over rows and outputs of g[o] xp[o + j].
        m = grad.shape[-1]
        pad_left = _pad_left(k, padding)
        pad_right = m + k - 1 - x.shape[-1] - pad_left
        xp = x.reshape(-1, x.shape[-1])
        if pad_left or pad_right:
            xp = torch.nn.functional.pad(xp, (pad_left, pad_right))
        if grad.numel() == 0:
            grad_taps = torch.zeros_like(taps)
        else:
            # A correlation of the padded rows with the gradient's, the rows as channels that the
            # convolution sums over: no intermediate k times the input's size.
            grad_taps = torch.nn.functional.conv1d(xp[None], grad.reshape(1, -1, m)).reshape(k)
            grad_taps = grad_taps.to(taps.device)
    return grad_x, grad_taps, None


def _fir_static_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    taps, padding = ctx.inputs[1], ctx.inputs[2]
    padded = _fir_x_gradient(grad, x, len(taps), padding)
    return torch.ops.constmem.fir_filter_static(padded, list(reversed(taps)), "VALID"), None, None


torch.library.register_autograd("constmem::fir_filter", _fir_backward, setup_context=_save_inputs)
torch.library.register_autograd(
    "constmem::fir_filter_static", _fir_static_backward, setup_context=_save_inputs
)


def _interpolate_gradients(x, knots, lo: float, hi: float, grad, with_knots: bool):
    """d/dx and d/dknots of sum(grad * y), with PyTorch's operations, in the op's arithmetic."""
    n = knots.shape[0]
    lo_t = torch.tensor(lo, dtype=x.dtype, device=x.device)
    scale = (n - 1) / (torch.tensor(hi, dtype=x.dtype, device=x.device) - lo_t)
    t = (x - lo_t) * scale
    inside = (t > 0) & (t < n - 1)
    t_inside = torch.where(inside, t, torch.zeros_like(t))
    i = torch.clamp(torch.floor(t_inside).long(), max=n - 2)
    f = t_inside - i.to(x.dtype)
    knots = knots.to(x.device)
    below, above = knots[i], knots[i + 1]
    zero = torch.zeros_like(grad)
    grad_x = torch.where(inside, grad * ((above - below) * scale), zero)
    if not with_knots:
        return grad_x, None
    at_below = torch.where(inside, grad * (1 - f), torch.where(t <= 0, grad, zero))
    at_above = torch.where(inside, grad * f, zero)
    grad_knots = torch.zeros(n, dtype=x.dtype, device=x.device)
    grad_knots.index_add_(0, i.reshape(-1), at_below.reshape(-1))
    grad_knots.index_add_(0, (i + 1).reshape(-1), at_above.reshape(-1))
    grad_knots[n - 1] += torch.where(t >= n - 1, grad, zero).sum()
    return grad_x, grad_knots


def _interpolate_backward(ctx, grad):
    x, knots = ctx.saved_tensors
    lo, hi = ctx.inputs[2], ctx.inputs[3]
    grad_x, grad_knots = _interpolate_gradients(
        x, knots, lo, hi, grad, with_knots=ctx.needs_input_grad[1]
    )
    if grad_knots is not None:
        grad_knots = grad_knots.to(knots.device)
    return grad_x, grad_knots, None, None


def _interpolate_static_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    knots, lo, hi = ctx.inputs[1], ctx.inputs[2], ctx.inputs[3]
    values = torch.tensor(knots, dtype=x.dtype, device=x.device)
    return _interpolate_gradients(x, values, lo, hi, grad, with_knots=False)[0], None, None, None


torch.library.register_autograd(
    "constmem::interpolate", _interpolate_backward, setup_context=_save_inputs
)
torch.library.register_autograd(
    "constmem::interpolate_static", _interpolate_static_backward, setup_context=_save_inputs
)
