# SPDX-License-Identifier: Apache-2.0
"""What every op wrapper shares: errors, the choice of table form, attr values known at build."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

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


def float_data(data: TensorLike, name: str) -> tf.Tensor:
    """Data of a float op: float32 or float64."""
    data = tf.convert_to_tensor(data)
    if data.dtype not in (tf.float32, tf.float64):
        raise invalid(f"{name} must be float32 or float64; got {data.dtype.name}")
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
