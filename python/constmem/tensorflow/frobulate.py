# SPDX-License-Identifier: Apache-2.0
"""Frobulate: out[i] = (((data[i] + table[0]) + table[1]) + ... + table[n-1])."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from constmem.tensorflow import _loader
from constmem.tensorflow._tables import Source, TensorLike, attr_values, float_data, resolve_source
from constmem.tensorflow._tables import invalid as _invalid

MAX_TABLE_SIZE = _loader.library_constant("constmem_frobulate_max_table_size")
"""The longest table: one 64 KiB constant bank of int32 entries (the op library's own limit)."""


_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def _check_fits_int32(values: np.ndarray) -> None:
    """Host values of a table: every form accepts the integers that fit int32, and only those."""
    if values.dtype.kind not in "iu" and values.size > 0:
        raise _invalid(f"table must be int32 (or integers that fit it); got {values.dtype}")
    if values.size and (values.min() < _INT32_MIN or values.max() > _INT32_MAX):
        raise _invalid("table entries must fit int32")


def _int32_table(table: tf.Tensor) -> tf.Tensor:
    """An integer tensor table as int32, so that every form accepts the same tables.

    Checked on the host when its values are known, else by assertions that run with the graph.
    """
    if table.dtype == tf.int32:
        return table
    if not table.dtype.is_integer:
        raise _invalid(f"table must be int32 (or integers that fit it); got {table.dtype.name}")
    static = tf.get_static_value(table)
    if static is not None:
        _check_fits_int32(static)
        return tf.constant(static.astype(np.int32))
    checks = [
        tf.debugging.assert_less_equal(
            table, tf.cast(_INT32_MAX, table.dtype), message="table entries must fit int32"
        )
    ]
    if not table.dtype.is_unsigned:
        checks.append(
            tf.debugging.assert_greater_equal(
                table, tf.cast(_INT32_MIN, table.dtype), message="table entries must fit int32"
            )
        )
    with tf.control_dependencies(checks):
        return tf.cast(table, tf.int32)


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
    source = resolve_source(source, table)
    ops = _loader.ops()
    with tf.name_scope(name or "Frobulate"):
        data = float_data(data, "data")
        if source == "attr":
            values = attr_values(table, "table")
            _check_fits_int32(values)
            return ops.constmem_frobulate_attr(data=data, table=[int(v) for v in values])
        table = _int32_table(tf.convert_to_tensor(table, dtype_hint=tf.int32))
        if source == "host":
            return ops.constmem_frobulate_host_table(data=data, table=table)
        return ops.constmem_frobulate(data=data, table=table)


def _pass_through_gradient(op, grad):
    del op
    return grad


@tf.RegisterGradient("Constmem>Frobulate")
def _frobulate_grad(op, grad):
    return [_pass_through_gradient(op, grad), None]


@tf.RegisterGradient("Constmem>FrobulateHostTable")
def _frobulate_host_table_grad(op, grad):
    return [_pass_through_gradient(op, grad), None]


@tf.RegisterGradient("Constmem>FrobulateAttr")
def _frobulate_attr_grad(op, grad):
    return _pass_through_gradient(op, grad)
