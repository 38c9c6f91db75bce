# SPDX-License-Identifier: Apache-2.0
"""The op registry an op library exports, and the rules every framework's binding applies.

Each op library exports `const char* constmem_op_registry()`: a JSON list with each op's names,
table rule, flags and attributes, made from the op's C++ description (ops/<op>/<op>_op.h). The
framework packages make their schemas, wrappers and limits from it, and word the errors for bad
input alike. Imports no framework.
"""

from __future__ import annotations

import ctypes
import dataclasses
import json
import math
import numbers
from collections.abc import Callable
from typing import Any

import numpy as np


@dataclasses.dataclass(frozen=True)
class Attr:
    """An attribute beyond the table: a choice among names, a float64, an int64, or a dtype.

    A dtype (kind "dtype") is one of `choices`, by name, and picks the output's dtype.
    """

    name: str
    kind: str
    choices: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Table:
    """One of an op's tables: its name, how many entries it takes, and whether they are int32."""

    name: str
    min_size: int
    max_size: int
    int32: bool = False


@dataclasses.dataclass(frozen=True)
class Output:
    """One of an op's outputs: its name and its dtype's rule.

    `rule`: "data" (the data's dtype), "fixed" (dtypes[0]) or "attr" (the one the attribute
    `attr` names, among `dtypes`).
    """

    name: str
    rule: str = "data"
    dtypes: tuple[str, ...] = ()
    attr: str = ""

    def dtype(self, data_dtype: str, attrs: dict[str, Any]) -> str:
        """The output's dtype for data of `data_dtype` and the (checked) attributes."""
        if self.rule == "fixed":
            return self.dtypes[0]
        if self.rule == "attr":
            return attrs[self.attr]
        return data_dtype


_FLOATS = ("float32", "float64", "float16", "bfloat16")


@dataclasses.dataclass(frozen=True)
class OpSpec:
    """One op as its library describes it.

    `table`, `min_table`, `max_table` and `int32_table` are its first table's; `tables` lists them
    all, and `table_spec(i)` is this spec with table i's in their place, which every check and
    message of one table takes.
    """

    library: str
    type: str
    name: str
    data: str
    table: str
    min_table: int
    max_table: int
    int32_table: bool
    float64: bool
    elementwise: bool
    doc: str
    attrs: tuple[Attr, ...]
    # The data's dtypes, as the registry lists them (a library built before it did: float32 and
    # float64, or float32 alone).
    dtypes: tuple[str, ...] = ()
    # Every table, in the order the op takes them (a library that lists none has the one above).
    tables: tuple[Table, ...] = ()
    # The output's dtype: "data" (the data's), "fixed" (output_dtypes[0]) or "attr" (the one
    # the attribute output_attr names, among output_dtypes).
    output_rule: str = "data"
    output_dtypes: tuple[str, ...] = ()
    output_attr: str = ""
    # Every output, in the order the op gives them (a library that lists none has one, `y`, of
    # the rule above).
    outputs: tuple[Output, ...] = ()

    def __post_init__(self) -> None:
        if not self.tables:
            first = Table(self.table, self.min_table, self.max_table, self.int32_table)
            object.__setattr__(self, "tables", (first,))
        if not self.outputs:
            first = Output("y", self.output_rule, self.output_dtypes, self.output_attr)
            object.__setattr__(self, "outputs", (first,))

    @property
    def several_outputs(self) -> bool:
        """Whether the op gives more than one output (each framework then returns a tuple)."""
        return len(self.outputs) > 1

    @property
    def output_names(self) -> tuple[str, ...]:
        return tuple(o.name for o in self.outputs)

    def output_dtypes_of(self, data_dtype: str, attrs: dict[str, Any]) -> tuple[str, ...]:
        """Each output's dtype for data of `data_dtype` and the (checked) attributes."""
        return tuple(o.dtype(data_dtype, attrs) for o in self.outputs)

    def float_outputs(self, data_dtype: str, attrs: dict[str, Any]) -> tuple[bool, ...]:
        """Whether each output is a float for this call: those a gradient flows from."""
        return tuple(d in _FLOATS for d in self.output_dtypes_of(data_dtype, attrs))

    def output_label(self, i: int) -> str:
        """How messages name output i: "scale's result" (its one output), "quantize's absmax"."""
        return f"{self.name}'s {self.outputs[i].name if self.several_outputs else 'result'}"

    @property
    def several_tables(self) -> bool:
        """Whether the op takes more than one table (each then a parameter of its own)."""
        return len(self.tables) > 1

    @property
    def table_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tables)

    def table_spec(self, i: int) -> OpSpec:
        """The spec with table i's name and rule as its table's: what one table's checks take."""
        if i == 0:
            return self
        t = self.tables[i]
        return dataclasses.replace(
            self, table=t.name, min_table=t.min_size, max_table=t.max_size, int32_table=t.int32
        )

    def output_dtype(self, data_dtype: str, attrs: dict[str, Any]) -> str:
        """The (first) output's dtype for data of `data_dtype` and the (checked) attributes."""
        return self.outputs[0].dtype(data_dtype, attrs)

    @property
    def float_output(self) -> bool:
        """Whether an output of every call is a float (a gradient can flow from it)."""

        def always_float(output: Output) -> bool:
            if output.rule == "data":
                return any(d in _FLOATS for d in self.data_dtypes())
            return all(d in _FLOATS for d in output.dtypes)

        return any(always_float(o) for o in self.outputs)

    @property
    def tf_name(self) -> str:
        """TensorFlow's name of the op: "Constmem>FirFilter"."""
        return f"{self.library[:1].upper()}{self.library[1:]}>{self.type}"

    @property
    def target(self) -> str:
        """The XLA FFI target: "constmem_fir_filter" (the static form adds "_static")."""
        return f"{self.library}_{self.name}"

    @property
    def sizes(self) -> str:
        """The table's sizes as every message words them: "1 to 2048 entries", "exactly 1 entry"."""
        if self.min_table == self.max_table:
            return f"exactly {self.min_table} {'entry' if self.min_table == 1 else 'entries'}"
        return f"{self.min_table} to {self.max_table} entries"

    def data_dtypes(self) -> tuple[str, ...]:
        """The data's dtypes, by name, in the order the op's description lists them."""
        if self.dtypes:
            return self.dtypes
        return ("float32", "float64") if self.float64 else ("float32",)

    def table_dtype(self, data_dtype: str) -> str:
        """The dtype a tensor table must have for data of `data_dtype` (the one rule).

        int32 for an int32 table; else the data's compute dtype: float32 for uint8 data, the data's
        own dtype otherwise.
        """
        return "int32" if self.int32_table else compute_dtype(data_dtype)


def compute_dtype(data_dtype: str) -> str:
    """The dtype data of `data_dtype` is computed in, and a table for it holds.

    float64 for float64 and int32, float32 for float32, float16, bfloat16, uint8 and int8
    (numeric.hpp's ComputeTypeOf).
    """
    return "float64" if data_dtype in ("float64", "int32") else "float32"


def dtype_name(dtype: Any) -> str | None:
    """A dtype of any framework, NumPy's or a name, as every message names it ("bfloat16").

    None for what is not a dtype.
    """
    if isinstance(dtype, str):
        return dtype
    name = getattr(dtype, "name", None)  # NumPy's, JAX's, TensorFlow's
    if isinstance(name, str):
        return {"half": "float16", "float": "float32", "double": "float64"}.get(name, name)
    text = str(dtype)
    if text.startswith("torch."):
        return text.removeprefix("torch.")
    try:
        return np.dtype(dtype).name
    except TypeError:
        return None


def read_registry(path: str) -> dict[str, OpSpec]:
    """The ops of the op library at `path`, by name."""
    library = ctypes.CDLL(path)
    library.constmem_op_registry.restype = ctypes.c_char_p
    ops = {}
    for op in json.loads(library.constmem_op_registry().decode()):
        attrs = tuple(
            Attr(a["name"], a["kind"], tuple(c for c in a["choices"].split(",") if c))
            for a in op.pop("attrs")
        )
        op["dtypes"] = tuple(op.get("dtypes", ()))
        op["tables"] = tuple(
            Table(t["name"], t["min_size"], t["max_size"], t["int32"]) for t in op.get("tables", ())
        )
        output = op.pop("output", {})
        op["output_rule"] = output.get("rule", "data")
        op["output_dtypes"] = tuple(output.get("dtypes", ()))
        op["output_attr"] = output.get("attr", "")
        op["outputs"] = tuple(
            Output(o["name"], o["rule"], tuple(o["dtypes"]), o.get("attr", ""))
            for o in op.pop("outputs", ())
        )
        spec = OpSpec(attrs=attrs, **op)
        ops[spec.name] = spec
    return ops


CallChecker = Callable[[OpSpec, str, tuple, Any, dict], tuple]


def call_checker(path: str) -> CallChecker | None:
    """`check(spec, dtype, shape, table_sizes, attrs)` of the op library at `path`, or None.

    It runs the checks the library's kernels run before they start (the attributes, the tables'
    sizes and the C++ description's output shape) without running the op, and returns the output's
    shape (a tuple of each output's for an op with several) or raises ValueError with the
    description's message: what a framework that traces (JAX) calls so that a refusal comes while
    it traces, not when the call runs. `table_sizes` is one size per table (a single int for an op
    with one). None for a library built without it.
    """
    library = ctypes.CDLL(path)
    several = getattr(library, "constmem_op_registry_check_outputs", None)
    function = several or getattr(library, "constmem_op_registry_check_call", None)
    if function is None:
        return None
    function.restype = ctypes.c_int
    longs = ctypes.POINTER(ctypes.c_longlong)
    ints = ctypes.POINTER(ctypes.c_int)
    # check_outputs takes the room in y_dims, each output's rank and the count where check_call
    # takes one rank.
    results = (longs, ctypes.c_int, ints, ints) if several else (longs, ints)
    function.argtypes = (
        ctypes.c_char_p,
        ctypes.c_char_p,
        longs,
        ctypes.c_int,
        longs,
        ctypes.c_int,
        ctypes.POINTER(ctypes.c_char_p),
        ctypes.POINTER(ctypes.c_double),
        longs,
        *results,
        ctypes.c_char_p,
        ctypes.c_int,
    )

    def check(spec: OpSpec, dtype: str, shape: tuple, table_sizes: Any, attrs: dict) -> tuple:
        if not isinstance(table_sizes, (tuple, list)):
            table_sizes = (table_sizes,)
        sizes = (ctypes.c_longlong * len(table_sizes))(*(int(n) for n in table_sizes))
        count = max(1, len(spec.attrs))
        choices = (ctypes.c_char_p * count)()
        floats = (ctypes.c_double * count)()
        ints = (ctypes.c_longlong * count)()
        for i, attr in enumerate(spec.attrs):
            value = attrs[attr.name]
            if attr.kind in ("choice", "dtype"):
                choices[i] = str(value).encode()
            elif attr.kind == "float64":
                floats[i] = float(value)
            else:
                ints[i] = int(value)
        dims = (ctypes.c_longlong * max(1, len(shape)))(*shape)
        room = 16 * len(spec.outputs)
        out = (ctypes.c_longlong * room)()
        ranks = (ctypes.c_int * len(spec.outputs))(room)
        count = ctypes.c_int(len(spec.outputs))
        results = (out, room, ranks, ctypes.byref(count)) if several else (out, ranks)
        error = ctypes.create_string_buffer(1024)
        status = function(
            spec.name.encode(),
            dtype.encode(),
            dims,
            len(shape),
            sizes,
            len(table_sizes),
            choices,
            floats,
            ints,
            *results,
            error,
            len(error),
        )
        if status == 1:
            raise ValueError(error.value.decode())
        if status != 0:
            raise RuntimeError(error.value.decode())
        shapes, start = [], 0
        for rank in ranks:
            shapes.append(tuple(out[start : start + rank]))
            start += rank
        return tuple(shapes) if spec.several_outputs else shapes[0]

    return check


def size_message(spec: OpSpec, size: Any) -> str:
    """The error for a table of `size` entries outside the op's limits."""
    return f"{spec.table} must have {spec.sizes}; got {size}"


def check_size(spec: OpSpec, size: int) -> None:
    """Raises ValueError for a table size outside the op's limits."""
    if not spec.min_table <= size <= spec.max_table:
        raise ValueError(size_message(spec, size))


def data_dtype_message(spec: OpSpec, dtype: str) -> str:
    """The error for data of a dtype the op does not take."""
    names = spec.data_dtypes()
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
    return f"{spec.data} must be {listed}; got {dtype}"


def table_dtype_message(spec: OpSpec, data_dtype: str, dtype: str) -> str:
    """The error for a tensor table of the wrong dtype."""
    return f"{spec.table} must be {spec.table_dtype(data_dtype)}; got {dtype}"


def device_message(spec: OpSpec, device: str, data_device: str) -> str:
    """The error for a tensor table on a device that is neither the host nor the data's."""
    return (
        f"{spec.table} must be on the CPU or on {spec.data}'s device ({data_device}); "
        f"got a tensor on {device}"
    )


def static_values(spec: OpSpec, table: Any, data_dtype: str) -> np.ndarray:
    """A Python or NumPy table as the static form's values, checked.

    int32 tables take integers that fit int32; others real numbers, rounded to the table's dtype
    for the data (the values the op computes with). Raises ValueError naming the table.
    """
    values = np.asarray(table)
    if values.ndim != 1:
        raise ValueError(f"{spec.table} must be a vector (rank 1); got shape {values.shape}")
    if not isinstance(table, np.ndarray):
        # Python entries by static_list's rule, every binding's: NumPy would take [True, 2] as
        # integers.
        values = np.asarray(static_list(spec, table), np.int64 if spec.int32_table else np.float64)
    check_size(spec, values.shape[0])
    if values.dtype == object or values.dtype.kind not in ("iu" if spec.int32_table else "iuf"):
        kind = "integers that fit int32" if spec.int32_table else "real numbers"
        raise ValueError(f"{spec.table} must be {kind}; got {values.dtype}")
    if spec.int32_table:
        if values.size and (values.min() < -(2**31) or values.max() >= 2**31):
            raise ValueError(f"{spec.table} entries must fit int32")
        return values.astype(np.int32)
    return values.astype(spec.table_dtype(data_dtype))


def static_list(spec: OpSpec, table: Any) -> list:
    """A Python or NumPy table as a list of Python numbers, checked as static_values checks it.

    Plain Python, which torch.compile traces: the op's kernel rounds the values to the data's
    dtype.
    """
    if isinstance(table, np.ndarray):
        if table.ndim != 1:
            raise ValueError(f"{spec.table} must be a vector (rank 1); got shape {table.shape}")
        table = table.tolist()
    values = list(table)
    check_size(spec, len(values))
    for v in values:
        if isinstance(v, bool) or not isinstance(
            v, numbers.Integral if spec.int32_table else numbers.Real
        ):
            kind = "integers that fit int32" if spec.int32_table else "real numbers"
            raise ValueError(f"{spec.table} must be {kind}; got {v!r}")
    if spec.int32_table:
        values = [int(v) for v in values]
        if any(v < -(2**31) or v >= 2**31 for v in values):
            raise ValueError(f"{spec.table} entries must fit int32")
        return values
    return [float(v) for v in values]


def attr_values(spec: OpSpec, given: dict[str, Any], data_dtype: str) -> dict[str, Any]:
    """The op's attributes, checked by kind: choices among their names, float64s finite.

    A float64 is rounded to the data's compute dtype first (the value the op computes with).
    """
    values = {}
    for attr in spec.attrs:
        value = given[attr.name]
        if attr.kind == "dtype":
            name = dtype_name(value)
            if name not in attr.choices:
                names = ", ".join(attr.choices[:-1]) + f" or {attr.choices[-1]}"
                shown = name if name is not None else repr(value)
                raise ValueError(f"{attr.name} must be {names}; got {shown}")
            value = name
        elif attr.kind == "choice":
            if value not in attr.choices:
                names = " or ".join(repr(c) for c in attr.choices)
                raise ValueError(f"{attr.name} must be {names}; got {value!r}")
        elif attr.kind == "float64":
            value = float(np.asarray(value, compute_dtype(data_dtype)))
            if not math.isfinite(value):
                raise ValueError(
                    f"{attr.name} must be finite in {compute_dtype(data_dtype)}; "
                    f"got {given[attr.name]}"
                )
        else:
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise ValueError(f"{attr.name} must be an integer; got {value!r}")
            value = int(value)
        values[attr.name] = value
    return values
