# SPDX-License-Identifier: Apache-2.0
"""What every table op's wrapper shares (the ops come from tf/adapter/table_op.h).

The choice of table form, each form's checks and encodings, errors, the gradients of the forms.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
import tensorflow as tf

TensorLike = tf.Tensor | np.ndarray | Sequence | float | int
Source = Literal["auto", "input", "host", "attr"]
SOURCES = ("auto", "input", "host", "attr")


def invalid(message: str) -> tf.errors.InvalidArgumentError:
    """The error a kernel would raise, raised before the op is built."""
    return tf.errors.InvalidArgumentError(None, None, message)


def resolve_source(source: str, table: object) -> str:
    """The form a table takes: "auto" is "attr" for Python or NumPy values, else "input"."""
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}; got {source!r}")
    if source == "auto":
        return "input" if tf.is_tensor(table) else "attr"
    return source


def attr_values(table: object, name: str) -> np.ndarray:
    """The values of a table for an attr: known when the graph is built, a vector."""
    if tf.is_tensor(table):
        table = tf.get_static_value(table)
        if table is None:
            raise invalid(f"source='attr' needs a {name} known when the graph is built")
    values = np.asarray(table)
    if values.ndim != 1:
        raise invalid(f"{name} must be a vector (rank 1); got shape {values.shape}")
    return values


def float_data(data: TensorLike, name: str, float64: bool = True) -> tf.Tensor:
    """Data of a float op: float32 or float64 (float32 alone unless `float64`)."""
    data = tf.convert_to_tensor(data)
    allowed = (tf.float32, tf.float64) if float64 else (tf.float32,)
    if data.dtype not in allowed:
        names = " or ".join(d.name for d in allowed)
        raise invalid(f"{name} must be {names}; got {data.dtype.name}")
    return data


def float_table(table: TensorLike, dtype: tf.DType, name: str) -> tf.Tensor:
    """A float table as a tensor of the data's dtype (integer or other float tensors are cast)."""
    table = tf.convert_to_tensor(table, dtype_hint=dtype)
    if not (table.dtype.is_floating or table.dtype.is_integer):
        raise invalid(f"{name} must be real numbers; got {table.dtype.name}")
    return table if table.dtype == dtype else tf.cast(table, dtype)


def attr_bits(values: np.ndarray, dtype: tf.DType) -> list[int]:
    """A float table as its attr: the IEEE-754 bit patterns in `dtype`, which keep it exact."""
    as_dtype = np.ascontiguousarray(values, dtype=dtype.as_numpy_dtype)
    bits = as_dtype.view(np.uint32 if dtype == tf.float32 else np.int64)
    return [int(b) for b in bits]


def attr_floats(bits: list[int], dtype: tf.DType) -> np.ndarray:
    """The values of a float table attr (the inverse of attr_bits)."""
    if dtype == tf.float32:
        return np.asarray(bits, dtype=np.int64).astype(np.uint32).view(np.float32)
    return np.asarray(bits, dtype=np.int64).view(np.float64)


_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def check_fits_int32(values: np.ndarray, name: str) -> None:
    """Host values of an int32 table: every form accepts the integers that fit int32, only those."""
    if values.dtype.kind not in "iu" and values.size > 0:
        raise invalid(f"{name} must be int32 (or integers that fit it); got {values.dtype}")
    if values.size and (values.min() < _INT32_MIN or values.max() > _INT32_MAX):
        raise invalid(f"{name} entries must fit int32")


def int32_table(table: TensorLike, name: str) -> tf.Tensor:
    """An integer table as an int32 tensor, so that every form accepts the same tables.

    Checked on the host when its values are known, else by assertions that run with the graph.
    """
    table = tf.convert_to_tensor(table, dtype_hint=tf.int32)
    if table.dtype == tf.int32:
        return table
    if not table.dtype.is_integer:
        raise invalid(f"{name} must be int32 (or integers that fit it); got {table.dtype.name}")
    static = tf.get_static_value(table)
    if static is not None:
        check_fits_int32(static, name)
        return tf.constant(static.astype(np.int32))
    message = f"{name} entries must fit int32"
    checks = [tf.debugging.assert_less_equal(table, tf.cast(_INT32_MAX, table.dtype), message)]
    if not table.dtype.is_unsigned:
        checks.append(
            tf.debugging.assert_greater_equal(table, tf.cast(_INT32_MIN, table.dtype), message)
        )
    with tf.control_dependencies(checks):
        return tf.cast(table, tf.int32)


def op_function(library: Any, op: str, suffix: str = "") -> Callable[..., tf.Tensor]:
    """The Python function TensorFlow generates for `op` ("Constmem>FirFilter" + suffix)."""
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", (op + suffix).replace(">", "_")).lower()
    return getattr(library, snake)


@dataclasses.dataclass(frozen=True)
class TableOp:
    """A table op as Python calls it: the three forms TableOp (tf/adapter/table_op.h) registers.

    Attributes:
      library: the loaded op library (`tf.load_op_library`).
      op: the op's name, "Constmem>Polyval" (its forms add "HostTable" and "Attr").
      data: the op's name of its data input.
      table: the op's name of its table (an input, or an attr).
      sizes: the fewest and the most entries the table takes.
      int32: the table holds int32 entries (else values converted to the data's dtype).
      float64: the op takes float64 data as well as float32 (TableOp's kFloat64).

    """

    library: Any
    op: str
    data: str
    table: str
    sizes: tuple[int, int]
    int32: bool = False
    float64: bool = True

    def __call__(
        self,
        data: TensorLike,
        table: TensorLike,
        *,
        source: Source = "auto",
        attrs: dict | Callable[[tf.DType], dict] | None = None,
        name: str | None = None,
    ) -> tf.Tensor:
        """Runs the form `source` picks, after checking and encoding the table for it.

        Args:
          data: float32 (or float64) data.
          table: a tensor, or a Python or NumPy sequence.
          source: "input", "host", "attr", or "auto" ("attr" for Python or NumPy tables, else
            "input").
          attrs: the op's further attrs, or a function of the data's dtype that returns them.
          name: the name scope of the op (default: the op's name without its namespace).

        """
        source = resolve_source(source, table)
        with tf.name_scope(name or self.op.split(">")[-1]):
            data = float_data(data, self.data, self.float64)
            extra = attrs(data.dtype) if callable(attrs) else dict(attrs or {})
            if source == "attr":
                values = attr_values(table, self.table)
                if self.int32:
                    check_fits_int32(values, self.table)
                low, high = self.sizes
                if not low <= values.size <= high:
                    raise invalid(
                        f"{self.table} must have {low} to {high} entries; got {values.size}"
                    )
                encoded = [int(v) for v in values] if self.int32 else attr_bits(values, data.dtype)
                call = op_function(self.library, self.op, "Attr")
                return call(**{self.data: data, self.table: encoded}, **extra)
            if self.int32:
                table = int32_table(table, self.table)
            else:
                table = float_table(table, data.dtype, self.table)
            call = op_function(self.library, self.op, "HostTable" if source == "host" else "")
            return call(**{self.data: data, self.table: table}, **extra)

    def register_gradients(self, with_input: Callable, with_attr: Callable) -> None:
        """Registers `with_input` as both input forms' gradient, `with_attr` as the attr form's."""
        tf.RegisterGradient(self.op)(with_input)
        tf.RegisterGradient(self.op + "HostTable")(with_input)
        tf.RegisterGradient(self.op + "Attr")(with_attr)
