# SPDX-License-Identifier: Apache-2.0
"""Each op's Python description: `constmem.ops.<op>`, the file ops/<op>/<op>.py of its folder.

An op's folder holds everything specific to it. Its C++ description (<op>_op.h) gives the names,
table rule and attributes that every op library exports in its registry; its Python description
adds what the framework packages need beyond them, written once for all of them:

- SIGNATURE: the public function's positional parameters (the data, the table and attributes
  without a default, in the order users pass them); DEFAULTS: the keyword attributes' defaults;
- DOC: the public function's documentation;
- output_shape(shape, table_size, attrs, maximum=max): the result's shape (default: the data's);
- check(attrs): checks beyond each attribute's kind (optional);
- backward(F, grad, data, table, attrs, need_data, need_table): the gradients, over the array
  namespace F that each framework package provides (constmem.ops.ARRAY_API lists its functions);
  it returns (grad_data, grad_table);
- LAYER: the Keras layer's description (optional);
- FUNCTIONS: functions built on the op, by name, each given as `make(ops) -> function` where
  `ops` is the framework's module of ops (optional; gaussian_blur, resample_poly);
- axes(shape, table_size, attrs): what each of the data's axes is to the op and which tables
  are split with the data (an Axes; default: every axis BATCH, every table replicated), from
  which JAX's partitioner and PyTorch's DTensor shard a call (constmem._sharding).

An op with several tables (its C++ description's kTables) takes each as a parameter of its own,
in SIGNATURE and everywhere else in their order: output_shape(shape, weight_size, bias_size,
attrs, maximum), backward(F, grad, data, weight, bias, attrs, need_data, need_weight, need_bias)
returning (grad_data, grad_weight, grad_bias), and F.op(data, weight, bias, **attrs).

An op with several outputs (its C++ description's kOutputs: codes and absmax) gives each, in
their order, everywhere: output_shape returns a tuple of each output's shape, backward takes one
gradient per output (grad_codes, grad_absmax, data, tables..., attrs, needs...: None for an
output that takes none, an integer one or one not used), and F.op returns a tuple. Its axes may
give `outputs`: for each output, which of the data's axes each of its axes follows (Axes).

An installed package has the files here; a source tree's are found in its op folders. Imports no
framework.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import NamedTuple

_SOURCE_OPS = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "ops"))
if os.path.exists(os.path.join(_SOURCE_OPS, "registry.cc")):
    __path__ = [
        *__path__,
        *(
            os.path.join(_SOURCE_OPS, name)
            for name in sorted(os.listdir(_SOURCE_OPS))
            if os.path.isdir(os.path.join(_SOURCE_OPS, name))
        ),
    ]

# The functions F offers to backward(), in every framework: F.op(data, table, **attrs) runs the op
# itself with a tensor table (attributes not given keep the forward call's); the others are
# array functions on the framework's tensors, whose shapes may be dynamic (TensorFlow).
ARRAY_API = (
    "op",  # op(data, table, **attrs): the op with a tensor table (each of several in order)
    "length",  # length(table): its number of entries (an int, or a scalar tensor)
    "size",  # size(t, axis): one dimension of t
    "scalar",  # scalar(value, like): a 0-d tensor of like's dtype and device
    "cast",  # cast(t, like): t (or a number) in like's dtype
    "zeros",  # zeros(n, like): a vector of n zeros
    "arange",  # arange(start, stop, step, like): a vector in like's dtype
    "concat",  # concat(vectors, axis=0)
    "flip",  # flip(vector)
    "where",  # where(condition, a, b): a or b (either may be a number)
    "minimum",  # minimum(t, number)
    "maximum",  # maximum(t, number)
    "round",  # round(t): to the nearest integer, halves to even
    "floor_int",  # floor_int(t): floor(t) as int32 indices
    "gather",  # gather(vector, indices)
    "scatter_add",  # scatter_add(n, indices, values, like): a vector of n sums
    "pad_last",  # pad_last(t, before, after): zeros around the last axis
    "power_sums",  # power_sums(x, g, n): [sum(g * x**k) for k in 0 .. n-1]
    "correlate_rows",  # correlate_rows(padded, g): [sum over rows of g . padded[j:j+m]] for j
    "row_sums",  # row_sums(t): the sum of each row of t (its last axis; leading axes flattened)
    "pad_axis",  # pad_axis(t, axis, before, after): zeros around one axis (ints)
    "take",  # take(t, indices, axis): t's slices at `indices` (a NumPy int vector) along axis
    "reshape",  # reshape(t, shape): t in `shape` (a tuple of ints, one of them may be -1)
    "sigmoid",  # sigmoid(t): 1 / (1 + exp(-t))
    "astype",  # astype(value, dtype, like=None): a tensor of the dtype named, on like's device
    # (None: the value's, or the default for a number or a NumPy array), gradients kept
    "bitcast",  # bitcast(t, dtype): t's bits as the dtype named, of the same width
    "shift_left",  # shift_left(t, n): an integer tensor's bits shifted left by the int n
    "shift_right",  # shift_right(t, n): shifted right (arithmetically)
    "low_bits",  # low_bits(t, n): the n lowest bits of an integer tensor
    "stop_gradient",  # stop_gradient(t): t, through which no gradient flows
    "rfft",  # rfft(t, n): the real FFT of the last axis, zero-padded to n (n // 2 + 1 bins)
    "irfft",  # irfft(t, n): its inverse, n real samples
    "on_gpu",  # on_gpu(t): whether t is on a GPU (or traced for one)
    "compiled",  # compiled(fn, *static): fn(F, *arrays, *static) as a function of the arrays,
    # compiled where the framework compiles eager code (JAX's jit, kept per fn and static)
)
# Any other name is the framework's NumPy-like namespace (jax.numpy, torch, tf.experimental.numpy):
# the array API standard's elementwise functions and reductions (F.exp(t), F.tanh(t), F.sum(t))
# under the names an author knows.


# What one of the data's axes is to an op (an entry of Axes.data):
# BATCH: the result has the axis at the same place, of the same size, and its slice i depends on
# the data's slice i alone (every axis of an elementwise op, a filter's leading axes, channels).
BATCH = "batch"
# WHOLE: the op reads the axis whole, and the result's axis may differ in size (a VALID filter,
# Upfirdn's rates): a call sharded along it gathers the axis first.
WHOLE = "whole"
# The borders a Halo may read past the array's ends.
BORDERS = ("zeros", "reflect", "replicate")


class Halo(NamedTuple):
    """A filtered axis: the result has its size, and slice i reads slices i - before .. i + after.

    `border` says what the op reads past the array's ends: "zeros", "reflect" (reflect-101:
    `... 2 1 | 0 1 2 ...`) or "replicate" (the end slice again). A call sharded along the axis
    gets the `before` slices of the shard before it and the `after` slices of the one after it
    (or the border's at the array's ends), runs on the widened shard and keeps its middle.
    """

    before: int
    after: int
    border: str = "zeros"


class Axes(NamedTuple):
    """What each of the data's axes is to an op, and which of its tables are split with the data.

    `data`: BATCH, WHOLE or a Halo for each axis. `tables`: for each table, None where every
    call reads all of it (replicated), or the data's axes (consecutive BATCH axes, as a tuple of
    non-negative indices) for each item of which, row-major, it holds one equal block of entries
    (per-image taps, a weight per channel), so that a shard of the first of them takes its
    items' blocks. `outputs`, for an op with several outputs: for each output, for each of its
    axes, the data's axis it follows (its index: an axis of that size and split, whose slice i
    depends on the data's slice i, or a Halo's window of them) or None
    (an axis of the output's own, never split); empty: each output's axis i follows the data's
    axis i.
    """

    data: tuple
    tables: tuple = ()
    outputs: tuple = ()


def axes(description: ModuleType, shape, table_size, attrs) -> Axes:
    """What each axis of data of `shape` is to the op, by its description's rule.

    `table_size`: the table's size, or a tuple of each table's for an op with several. Without a
    rule, every axis is BATCH and every table replicated (an elementwise op).
    """
    sizes = table_size if isinstance(table_size, tuple) else (table_size,)
    rule = getattr(description, "axes", None)
    if rule is None:
        return Axes((BATCH,) * len(shape), (None,) * len(sizes))
    found = rule(tuple(shape), *sizes, attrs)
    if len(found.data) != len(shape) or len(found.tables) != len(sizes):
        raise ValueError(
            f"{description.__name__}.axes gave {len(found.data)} axes and {len(found.tables)} "
            f"tables for data of rank {len(shape)} with {len(sizes)} tables"
        )
    return found


def describe(name: str) -> ModuleType:
    """The Python description of the op `name` (its folder's <name>.py)."""
    return importlib.import_module(f"{__name__}.{name}")


def output_shape(description: ModuleType, shape, table_size, attrs, maximum=max) -> tuple:
    """The op's result shape: its description's rule, else the data's shape.

    `table_size`: the table's size, or a tuple of each table's for an op with several. An op with
    several outputs gives a tuple of each one's shape.
    """
    rule = getattr(description, "output_shape", None)
    if rule is None:
        return tuple(shape)
    sizes = table_size if isinstance(table_size, tuple) else (table_size,)
    return rule(shape, *sizes, attrs, maximum)
