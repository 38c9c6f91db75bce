# SPDX-License-Identifier: Apache-2.0
"""Frobulate: out[i] = (((data[i] + table[0]) + table[1]) + ... + table[n-1])."""

from __future__ import annotations

import tensorflow as tf

from constmem.tensorflow import _loader
from constmem.tensorflow._tables import Source, TableOp, TensorLike

MAX_TABLE_SIZE = _loader.library_constant("constmem_frobulate_max_table_size")
"""The longest table: one 64 KiB constant bank of int32 entries (the op library's own limit)."""
_FROBULATE = TableOp(
    _loader.ops(),
    "Constmem>Frobulate",
    data="data",
    table="table",
    sizes=(1, MAX_TABLE_SIZE),
    int32=True,
)


@tf.autograph.experimental.do_not_convert
def frobulate(
    data: TensorLike, table: TensorLike, *, source: Source = "auto", name: str | None = None
) -> tf.Tensor:
    """Adds every entry of `table` to every element of `data`, in order.

    `out[i] = (((data[i] + table[0]) + table[1]) + ... + table[n-1])`, evaluated left to right in
    the data type, each table entry converted to that type first. On a GPU the table is read from
    `__constant__` memory (or a by-value kernel parameter) with warp-uniform indices. GPU and CPU
    results are bitwise equal except for NaN payloads (the GPU does not keep them) and subnormal
    data (the CPU reads them as zero, as all TensorFlow CPU kernels do); docs/numerics.md.

    Args:
      data: float32 or float64 tensor of any shape, including 0-d and empty.
      table: vector of 1 to 16,384 integers that fit int32 (64 KiB as int32): a tensor, or a
        Python/NumPy sequence. Every form takes any integer dtype and converts it to int32.
      source: how the table reaches the GPU kernel.
        "input": an ordinary input; on the GPU a table of more than 1,024 entries is copied
          device-to-device into constant memory, a smaller one is read where it is (for this
          kernel the copy costs more than the constant cache saves).
        "host": a host-memory input; small tables (up to 1,024 entries) become a by-value kernel
          parameter, larger ones are staged through TensorFlow's pinned host allocator.
        "attr": fixed per graph node; uploaded at most once per device and content.
        "auto" (default): "attr" for a Python or NumPy table, "input" for a tensor.
      name: optional op name.

    Returns:
      A tensor with the shape and dtype of `data`.

    Raises:
      tf.errors.InvalidArgumentError: a table of rank other than 1, of length 0 or above 16,384,
        of a non-integer dtype or with entries outside int32; data of a dtype other than
        float32/float64 or with more elements than the kernel can address (2^62).

    The gradient with respect to `data` is the incoming gradient; `table` has none.

    """
    return _FROBULATE(data, table, source=source, name=name)


def _grad_with_input(op, grad):
    del op
    return [grad, None]


def _grad_with_attr(op, grad):
    del op
    return grad


_FROBULATE.register_gradients(_grad_with_input, _grad_with_attr)
