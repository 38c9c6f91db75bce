# SPDX-License-Identifier: Apache-2.0
"""Every table op's TensorFlow wrapper, made from its description (tf/adapter/table_op.h).

The choice of table form, each form's checks and encodings, errors, and the forms' gradients from
the op's backward formula (constmem.ops), for an op with one table or several.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, Literal

import numpy as np
import tensorflow as tf

from constmem import _registry
from constmem._polyval import coefficient_gradient_blocks
from constmem._registry import OpSpec

TensorLike = tf.Tensor | np.ndarray | Sequence | float | int
Source = Literal["auto", "input", "host", "attr"]
SOURCES = ("auto", "input", "host", "attr")


def invalid(message: str) -> tf.errors.InvalidArgumentError:
    """The error a kernel would raise, raised before the op is built."""
    return tf.errors.InvalidArgumentError(None, None, message)


# What a static table usually is. tf.is_tensor checks a runtime protocol, which costs several
# microseconds on a value that is not a tensor: these are told apart first.
_PLAIN_VALUES = (list, tuple, np.ndarray, int, float)


def is_tensor(value: object) -> bool:
    """tf.is_tensor(value), quickly for Python and NumPy values."""
    return not isinstance(value, _PLAIN_VALUES) and tf.is_tensor(value)


def resolve_source(source: str, table: object) -> str:
    """The form a table takes: "auto" is "attr" for Python or NumPy values, else "input"."""
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}; got {source!r}")
    if source == "auto":
        return "input" if is_tensor(table) else "attr"
    return source


def attr_bits(values: np.ndarray, dtype: tf.DType) -> list[int]:
    """A float table as its attr: the IEEE-754 bit patterns in `dtype`, which keep it exact."""
    as_dtype = np.ascontiguousarray(values, dtype=dtype.as_numpy_dtype)
    bits = as_dtype.view(np.uint32 if dtype == tf.float32 else np.int64)
    return [int(b) for b in bits]


def widened_backward(backward, arrays, grads, data, tables, attrs: dict, need: list) -> list:
    """The description's backward, float16 and bfloat16 data's in float32.

    `grads`: one gradient per output (None for an integer one). The op computes such data in
    float32: its gradients are the float32 call's, the data's cast back to its dtype, as for a
    cast, the op in float32, and a cast back.
    """
    if data.dtype in (tf.float16, tf.bfloat16):
        grad_data, *grad_tables = backward(
            arrays,
            *(None if g is None else tf.cast(g, tf.float32) for g in grads),
            tf.cast(data, tf.float32),
            *tables,
            attrs,
            True,
            *need,
        )
        return [None if grad_data is None else tf.cast(grad_data, data.dtype), *grad_tables]
    return backward(arrays, *grads, data, *tables, attrs, True, *need)


def output_grads(spec: OpSpec, op: tf.Operation, grads: tuple, attrs: dict) -> tuple:
    """One gradient per output of a node of the op: None for an integer output."""
    floats = spec.float_outputs(op.inputs[0].dtype.name, attrs)
    return tuple(g if f else None for g, f in zip(grads, floats, strict=True))


def attr_floats(bits: list[int], dtype: tf.DType) -> np.ndarray:
    """The values of a float table attr (the inverse of attr_bits)."""
    if dtype == tf.float32:
        return np.asarray(bits, dtype=np.int64).astype(np.uint32).view(np.float32)
    return np.asarray(bits, dtype=np.int64).view(np.float64)


def float64_bits(value: float) -> int:
    """A float64 attribute as its TensorFlow int attr: its IEEE-754 bits."""
    return int(np.asarray(value, np.float64).view(np.int64))


def float64_value(bits: int) -> float:
    """The inverse of float64_bits."""
    return float(np.asarray(bits, np.int64).view(np.float64))


def op_function(library: Any, op: str, suffix: str = "") -> Callable[..., tf.Tensor]:
    """The Python function TensorFlow generates for `op` ("Constmem>FirFilter" + suffix)."""
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", (op + suffix).replace(">", "_")).lower()
    return getattr(library, snake)


# Python tables as their attrs, by (op, dtype, values, the values' types): a table fixed per call
# site (a resampler's filter) comes again and again, and encoding thousands of entries costs more
# than the call. The types are part of the key: 1 == 1.0, but an int32 table takes only the first.
_ENCODED_TABLES: dict[tuple, list] = {}
_ENCODED_TABLES_KEPT = 64


def _encoded_key(spec: OpSpec, table: object, dtype: str) -> tuple | None:
    if not isinstance(table, (list, tuple)):
        return None
    values = tuple(table)
    return (spec.name, dtype, values, tuple(map(type, values)))


def _encoded_tables_key(spec: OpSpec, tables: Sequence, dtype: str) -> tuple | None:
    """The cache key of an op's several Python tables: None unless each is a list or tuple."""
    keys = [_encoded_key(spec, table, dtype) for table in tables]
    if None in keys:
        return None
    return (spec.name, dtype, *(key[2:] for key in keys))  # each table's values and their types


def _remember(key: tuple, encoded: Any) -> None:
    if len(_ENCODED_TABLES) >= _ENCODED_TABLES_KEPT:
        _ENCODED_TABLES.clear()
    _ENCODED_TABLES[key] = encoded


# One table's checks and encodings, by the spec with that table's name and rule in its table
# fields (OpSpec.table_spec): every message names the table as the caller wrote it.


def static_values(spec: OpSpec, table: object, dtype: str) -> np.ndarray:
    """A Python or NumPy table's values for data of `dtype`, checked (InvalidArgumentError)."""
    try:
        return _registry.static_values(spec, table, dtype)
    except ValueError as error:
        raise invalid(str(error)) from None


def attr_encoding(spec: OpSpec, values: np.ndarray, dtype: str) -> list[int]:
    """A static table's values as its attr: int32 values, or the bit patterns in the table dtype."""
    if spec.int32_table:
        return values.tolist()
    return attr_bits(values, tf.as_dtype(spec.table_dtype(dtype)))


def known_table(spec: OpSpec, table: object) -> object:
    """A tensor table's value where the graph knows it, for the attr form."""
    static = tf.get_static_value(table)
    if static is None:
        raise invalid(f"source='attr' needs a {spec.table} known when the graph is built")
    return static


def tensor_table(spec: OpSpec, table: object, dtype: str) -> tf.Tensor:
    """A table as an input: a constant of a static one, else the tensor, of the table dtype."""
    if not is_tensor(table):
        return tf.constant(static_values(spec, table, dtype))
    if not isinstance(table, tf.Tensor):
        table = tf.convert_to_tensor(table)  # a variable reads as its value
    if table.dtype.name != spec.table_dtype(dtype):
        raise invalid(_registry.table_dtype_message(spec, dtype, table.dtype.name))
    return table


@dataclasses.dataclass(frozen=True)
class TableOp:
    """A table op as Python calls it: the three forms tf/adapter/table_op.h registers.

    Attributes:
      library: the loaded op library (`tf.load_op_library`).
      spec: the op, as the library's registry describes it.
      description: the op's Python description (constmem.ops), for checks and gradients.

    """

    library: Any
    spec: OpSpec
    description: ModuleType

    def attrs(self, given: dict[str, Any], dtype: tf.DType) -> dict[str, Any]:
        """The op's attributes, checked in the data's dtype, as Python values."""
        try:
            values = _registry.attr_values(self.spec, given, dtype.name)
            check = getattr(self.description, "check", None)
            if check is not None:
                check(values)
        except ValueError as error:
            raise invalid(str(error)) from None
        return values

    def encoded(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """The attributes as TensorFlow's attrs: a float64 as its bits."""
        return {
            a.name: float64_bits(attrs[a.name])
            if a.kind == "float64"
            else tf.as_dtype(attrs[a.name])
            if a.kind == "dtype"
            else attrs[a.name]
            for a in self.spec.attrs
        }

    def decoded(self, op: tf.Operation) -> dict[str, Any]:
        """The attributes of a node of the op, as Python values."""
        values = {}
        for a in self.spec.attrs:
            value = op.get_attr(a.name)
            values[a.name] = (
                float64_value(value)
                if a.kind == "float64"
                else _registry.dtype_name(value)
                if a.kind == "dtype"
                else value.decode()
                if isinstance(value, bytes)
                else value
            )
        return values

    @functools.cached_property
    def table_specs(self) -> tuple[OpSpec, ...]:
        """The spec of each table (OpSpec.table_spec), which its checks and messages take."""
        return tuple(self.spec.table_spec(i) for i in range(len(self.spec.tables)))

    def __call__(
        self,
        data: TensorLike,
        table: TensorLike | Sequence[TensorLike],
        attrs: dict[str, Any],
        *,
        source: Source = "auto",
        name: str | None = None,
    ) -> tf.Tensor:
        """Runs the form `source` picks, after checking and encoding the tables for it.

        Args:
          data: float32 (or float64) data.
          table: a tensor (of the op's table dtype), or a Python or NumPy sequence; for an op with
            several tables, the tuple of them in the op's order, each of those.
          attrs: the op's attributes by name.
          source: "input", "host", "attr", or "auto" ("attr" for Python or NumPy tables, else
            "input").
          name: the name scope of the op (default: the op's type).

        Returns the output, or a tuple of each of several in the op's order.

        """
        run = self.call_tables if self.spec.several_tables else self.call_one
        result = run(data, table, attrs, source=source, name=name)
        # Several outputs: TensorFlow's named tuple of them, as a plain tuple in the op's order.
        return tuple(result) if self.spec.several_outputs else result

    def call_one(
        self,
        data: TensorLike,
        table: TensorLike,
        attrs: dict[str, Any],
        *,
        source: Source = "auto",
        name: str | None = None,
    ) -> tf.Tensor:
        """__call__ for an op with one table."""
        spec = self.spec
        source = resolve_source(source, table)
        with tf.name_scope(name or spec.type):
            data = data if isinstance(data, tf.Tensor) else tf.convert_to_tensor(data)
            if data.dtype.name not in spec.data_dtypes():
                raise invalid(_registry.data_dtype_message(spec, data.dtype.name))
            extra = self.encoded(self.attrs(attrs, data.dtype))
            if is_tensor(table) and source == "attr":
                table = known_table(spec, table)
            key = _encoded_key(spec, table, data.dtype.name) if source == "attr" else None
            encoded = _ENCODED_TABLES.get(key) if key is not None else None
            if encoded is not None:
                call = op_function(self.library, spec.tf_name, "Attr")
                return call(**{spec.data: data, spec.table: encoded}, **extra)
            if source == "attr":
                values = static_values(spec, table, data.dtype.name)
                encoded = attr_encoding(spec, values, data.dtype.name)
                if key is not None:
                    _remember(key, encoded)
                call = op_function(self.library, spec.tf_name, "Attr")
                return call(**{spec.data: data, spec.table: encoded}, **extra)
            table = tensor_table(spec, table, data.dtype.name)
            call = op_function(self.library, spec.tf_name, "HostTable" if source == "host" else "")
            return call(**{spec.data: data, spec.table: table}, **extra)

    def call_tables(
        self,
        data: TensorLike,
        tables: Sequence[TensorLike],
        attrs: dict[str, Any],
        *,
        source: Source = "auto",
        name: str | None = None,
    ) -> tf.Tensor:
        """__call__ for an op with several tables, `tables` in the op's order.

        Every table takes the one form: "auto" is "attr" where all are Python or NumPy values,
        else "input" (the static ones then constants); "host" passes them all in host memory.
        """
        spec = self.spec
        names = spec.table_names
        if not isinstance(tables, (tuple, list)) or len(tables) != len(names):
            got = len(tables) if isinstance(tables, (tuple, list)) else type(tables).__name__
            raise ValueError(
                f"{spec.name} takes {len(names)} tables ({', '.join(names)}); got {got}"
            )
        if source not in SOURCES:
            raise ValueError(f"source must be one of {SOURCES}; got {source!r}")
        if source == "auto":
            source = "input" if any(is_tensor(t) for t in tables) else "attr"
        with tf.name_scope(name or spec.type):
            data = data if isinstance(data, tf.Tensor) else tf.convert_to_tensor(data)
            dtype = data.dtype.name
            if dtype not in spec.data_dtypes():
                raise invalid(_registry.data_dtype_message(spec, dtype))
            extra = self.encoded(self.attrs(attrs, data.dtype))
            if source == "attr":
                tables = [
                    known_table(s, t) if is_tensor(t) else t
                    for s, t in zip(self.table_specs, tables, strict=True)
                ]
                key = _encoded_tables_key(spec, tables, dtype)
                encoded = _ENCODED_TABLES.get(key) if key is not None else None
                if encoded is None:
                    encoded = [
                        attr_encoding(s, static_values(s, t, dtype), dtype)
                        for s, t in zip(self.table_specs, tables, strict=True)
                    ]
                    if key is not None:
                        _remember(key, encoded)
                call = op_function(self.library, spec.tf_name, "Attr")
                return call(**{spec.data: data}, **dict(zip(names, encoded, strict=True)), **extra)
            inputs = [
                tensor_table(s, t, dtype) for s, t in zip(self.table_specs, tables, strict=True)
            ]
            call = op_function(self.library, spec.tf_name, "HostTable" if source == "host" else "")
            return call(**{spec.data: data}, **dict(zip(names, inputs, strict=True)), **extra)

    def register_gradients(self) -> None:
        """Registers the forms' gradients, from the op's backward formula.

        One gradient per input: the data's, and each table's but an int32 table's (None). An op
        with several outputs gets one gradient per output (None for an integer one).
        """
        tables = self.spec.tables
        need = [not t.int32 for t in tables]

        def with_input(op, *grads):
            data, *inputs = op.inputs
            attrs = self.decoded(op)
            grads = output_grads(self.spec, op, grads, attrs)
            if not data.dtype.is_floating:  # integer data: their tables' gradients alone
                if not self.spec.float_output:
                    return [None] * len(op.inputs)
                _, *grad_tables = self.description.backward(
                    TfArrays(self, attrs), *grads, data, *inputs, attrs, False, *need
                )
                return [None, *(g if n else None for g, n in zip(grad_tables, need, strict=True))]
            grad_data, *grad_tables = widened_backward(
                self.description.backward, TfArrays(self, attrs), grads, data, inputs, attrs, need
            )
            return [grad_data, *(g if n else None for g, n in zip(grad_tables, need, strict=True))]

        def with_attr(op, *grads):
            dtype = op.get_attr("T")
            if not dtype.is_floating:  # integer data: no gradient flows
                return None
            values = [
                tf.constant(
                    np.asarray(op.get_attr(t.name), np.int32)
                    if t.int32
                    else attr_floats(
                        op.get_attr(t.name), tf.as_dtype(_registry.compute_dtype(dtype.name))
                    )
                )
                for t in tables
            ]
            attrs = self.decoded(op)
            return widened_backward(
                self.description.backward,
                TfArrays(self, attrs),
                output_grads(self.spec, op, grads, attrs),
                op.inputs[0],
                values,
                attrs,
                [False] * len(tables),
            )[0]

        for suffix, gradient in (("", with_input), ("HostTable", with_input), ("Attr", with_attr)):
            if self.spec.tf_name + suffix not in _REGISTERED:  # once per process
                tf.RegisterGradient(self.spec.tf_name + suffix)(gradient)
                _REGISTERED.add(self.spec.tf_name + suffix)


_REGISTERED: set[str] = set()


def _tensor(value, like):
    """`value` (a number, sequence or tensor) as a tensor of like's dtype.

    Python numbers are converted in that dtype, not through float32 (tf.cast's default).
    """
    if tf.is_tensor(value):
        return tf.cast(value, like.dtype)
    return tf.constant(value, like.dtype)


class TfArrays:
    """The array namespace F of the ops' backward formulas (constmem.ops.ARRAY_API).

    In TensorFlow, where sizes may be known only when the graph runs.
    """

    def __init__(self, op: TableOp, attrs: dict[str, Any]) -> None:
        self._op = op
        self._attrs = attrs

    def op(self, data, *tables, **attrs):
        table = tables if self._op.spec.several_tables else tables[0]
        return self._op(data, table, {**self._attrs, **attrs}, source="input")

    def __getattr__(self, name):
        """Any other name is tf.experimental.numpy's (NumPy's names: exp, tanh, sum, ...)."""
        return getattr(tf.experimental.numpy, name)

    @staticmethod
    def sigmoid(t):
        return tf.math.sigmoid(t)

    @staticmethod
    def rfft(t, n):
        return tf.signal.rfft(t, [n])

    @staticmethod
    def irfft(t, n):
        return tf.signal.irfft(t, [n])

    def compiled(self, fn, *static):
        """Fn as it is: eager calls run op by op, and torch.compile or tf.function compile them."""
        return lambda *arrays: fn(self, *arrays, *static)

    @staticmethod
    def on_gpu(t):
        """Where an eager tensor is; in a graph, where the ops go by default."""
        device = getattr(t, "device", "") or ""
        if device:
            return ":GPU:" in device
        return bool(tf.config.list_logical_devices("GPU"))

    @staticmethod
    def length(table):
        return table.shape[0] if table.shape[0] is not None else tf.shape(table)[0]

    @staticmethod
    def size(t, axis):
        static = t.shape[axis] if t.shape.rank is not None else None
        return static if static is not None else tf.shape(t)[axis]

    @staticmethod
    def scalar(value, like):
        return _tensor(value, like)

    @staticmethod
    def cast(t, like):
        return _tensor(t, like)

    @staticmethod
    def zeros(n, like):
        return tf.zeros([n], like.dtype)

    @staticmethod
    def arange(start, stop, step, like):
        return tf.cast(tf.range(start, stop, step), like.dtype)

    @staticmethod
    def concat(vectors, axis=0):
        return tf.concat(vectors, axis)

    @staticmethod
    def flip(vector):
        return tf.reverse(vector, [0])

    @staticmethod
    def where(condition, a, b):
        like = a if is_tensor(a) else b
        return tf.where(condition, _tensor(a, like), _tensor(b, like))

    @staticmethod
    def minimum(t, number):
        return tf.minimum(t, tf.cast(number, t.dtype))

    @staticmethod
    def maximum(t, number):
        return tf.maximum(t, tf.cast(number, t.dtype))

    @staticmethod
    def round(t):
        return tf.round(t)

    @staticmethod
    def floor_int(t):
        return tf.cast(tf.floor(t), tf.int32)

    @staticmethod
    def gather(vector, indices):
        return tf.gather(vector, indices)

    @staticmethod
    def scatter_add(n, indices, values, like):
        return tf.math.unsorted_segment_sum(tf.reshape(values, [-1]), tf.reshape(indices, [-1]), n)

    @staticmethod
    def pad_last(t, before, after):
        rank = tf.rank(t)
        last = tf.reshape(tf.cast(tf.stack([before, after]), tf.int32), [1, 2])
        return tf.pad(t, tf.concat([tf.zeros([rank - 1, 2], tf.int32), last], 0))

    @staticmethod
    def power_sums(x, g, n):
        """sum(g * x**k) for k < n, in blocks of at most 16 powers (one map_fn step each)."""
        blocks, per_block = coefficient_gradient_blocks(n)
        x, g = tf.reshape(x, [-1, 1]), tf.reshape(g, [-1, 1])

        def block(m):
            exponents = tf.cast(m * per_block + tf.range(per_block), x.dtype)
            # Elementwise and a reduction: no cuBLAS call, so it runs wherever the op does.
            return tf.reduce_sum(tf.math.pow(x, exponents) * g, axis=0)

        if isinstance(blocks, int) and blocks == 1:
            sums = block(0)
        else:
            sums = tf.map_fn(block, tf.range(blocks), fn_output_signature=x.dtype)
        return tf.reshape(sums, [-1])[:n]

    @staticmethod
    def correlate_rows(padded, g):
        """One tap at a time, with elementwise products and reductions.

        No cuDNN convolution, so that the gradient runs wherever the op does.
        """
        length, m = tf.shape(padded)[-1], tf.shape(g)[-1]
        rows = tf.reshape(padded, [-1, length])
        rows_g = tf.reshape(g, [-1, m])
        return tf.map_fn(
            lambda j: tf.reduce_sum(rows_g * rows[:, j : j + m]),
            tf.range(length - m + 1),
            fn_output_signature=g.dtype,
        )

    @staticmethod
    def row_sums(t):
        return tf.reduce_sum(tf.reshape(t, [-1, tf.shape(t)[-1]]), -1)

    @staticmethod
    def pad_axis(t, axis, before, after):
        rank = t.shape.rank
        paddings = [[0, 0] for _ in range(rank)]
        paddings[axis] = [before, after]
        return tf.pad(t, paddings)

    @staticmethod
    def take(t, indices, axis):
        return tf.gather(t, np.asarray(indices, np.int64), axis=axis)

    @staticmethod
    def reshape(t, shape):
        return tf.reshape(t, shape)

    @staticmethod
    def astype(value, dtype, like=None):
        return tf.cast(tf.convert_to_tensor(value), dtype)

    @staticmethod
    def bitcast(t, dtype):
        return tf.bitcast(t, dtype)

    # TensorFlow's integer tensors have no shift or bitwise operators.
    @staticmethod
    def shift_left(t, n):
        return tf.bitwise.left_shift(t, tf.constant(n, t.dtype))

    @staticmethod
    def shift_right(t, n):
        return tf.bitwise.right_shift(t, tf.constant(n, t.dtype))

    @staticmethod
    def low_bits(t, n):
        return tf.bitwise.bitwise_and(t, tf.constant((1 << n) - 1, t.dtype))

    @staticmethod
    def stop_gradient(t):
        return tf.stop_gradient(t)
