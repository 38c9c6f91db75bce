# SPDX-License-Identifier: Apache-2.0
"""Keras 3 layers over constmem's ops, on the TensorFlow, JAX and PyTorch backends.

import keras
import constmem.keras

model = keras.Sequential([keras.Input((8,)), constmem.keras.Frobulate(table=[1, 2, 3])])
model.save("model.keras")          # reloads wherever `constmem.keras` has been imported

Each op whose description (constmem.ops) has a LAYER gets one, made from it: a layer that trains
its table (`Polyval(degree=3)`, `FirFilter(taps=5)`, `Interpolate(knots=9, lo=-1.0, hi=1.0)`: the
table's size, the op's attributes, optional starting values `initial`) or each of its tables
(`SeparableFilter(row_taps=5, column_taps=3)`), or one whose table is fixed in its configuration
(`Frobulate(table=[...])`). Each layer calls the op of the backend
Keras runs on (`constmem.tensorflow`, `constmem.jax` or `constmem.torch`), so one `.keras` file
trains and reloads on each, with the same results. The layer of an op with several outputs
returns the op's tuple of them, and its output shape is the description's tuple of shapes.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import keras
import numpy as np

from constmem import _libraries, _registry
from constmem import ops as descriptions

_BACKENDS = ("tensorflow", "jax", "torch")


def _require_supported_backend() -> None:
    backend = keras.backend.backend()
    if backend not in _BACKENDS:
        raise RuntimeError(
            f"constmem.keras runs on Keras's TensorFlow, JAX and PyTorch backends; this process "
            f"uses '{backend}' (set KERAS_BACKEND to one of {', '.join(_BACKENDS)})"
        )


def _ops():
    """The constmem subpackage of the backend Keras runs on."""
    backend = keras.backend.backend()
    if backend == "jax":
        import constmem.jax as ops
    elif backend == "torch":
        import constmem.torch as ops
    else:
        import constmem.tensorflow as ops
    return ops


if keras.backend.backend() == "tensorflow":
    # The op library registers its XLA kernels when it loads, which must come before Keras's
    # first compiled step (jit_compile) builds XLA's registry.
    import constmem.tensorflow  # noqa: F401


def _registry_of_backend() -> dict[str, _registry.OpSpec]:
    """The op registry of the backend's op library (the layers' ops and attributes)."""
    framework = keras.backend.backend() if keras.backend.backend() in _BACKENDS else "tensorflow"
    return _registry.read_registry(_libraries.library_path(framework))


class _FixedTableLayer(keras.layers.Layer):
    """An op with a table fixed per layer, kept in the layer's configuration; no weights."""

    _op_name = ""

    def __init__(self, table: Sequence[Any], source: str = "attr", **kwargs: Any) -> None:
        _require_supported_backend()
        super().__init__(**kwargs)
        if source not in ("attr", "host"):
            raise ValueError(f"source must be 'attr' or 'host'; got {source!r}")
        spec = _SPECS[self._op_name]
        kind = int if spec.int32_table else float
        self.table = [kind(v) for v in np.asarray(table).reshape(-1)]
        self.source = source

    def call(self, inputs):
        """Applies the op to `inputs`."""
        op = getattr(_ops(), self._op_name)
        if keras.backend.backend() != "tensorflow":  # a static table: the attr form's equal
            return op(inputs, self.table)
        if self.source == "host":
            import tensorflow as tf

            dtype = tf.int32 if _SPECS[self._op_name].int32_table else inputs.dtype
            return op(inputs, tf.constant(self.table, dtype), source="host")
        return op(inputs, self.table, source="attr")

    def compute_output_shape(self, input_shape):
        """The op's output shape."""
        description = descriptions.describe(self._op_name)
        return descriptions.output_shape(description, input_shape, len(self.table), {})

    def get_config(self) -> dict[str, Any]:
        """The layer's configuration, table included, for saving."""
        return {**super().get_config(), "table": list(self.table), "source": self.source}


def _layer_tables(layer: dict) -> tuple[dict, ...]:
    """A LAYER's trainable tables: its "tables", or the one it describes itself.

    Each: "size" (the layer's argument for the table's size), "size_to_entries" (its entries),
    "initial" (entries, attrs) -> starting values, "weight" (the weight's name) and "variable"
    (the layer's attribute holding it).
    """
    tables = layer.get("tables", (layer,))
    return tuple({"size_to_entries": lambda n: n, "variable": t["weight"], **t} for t in tables)


class _TrainedTableLayer(keras.layers.Layer):
    """An op whose tables are trainable weights, passed as tensors on every call."""

    _op_name = ""
    _signature: inspect.Signature

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _require_supported_backend()
        own = {
            name: kwargs.pop(name) for name in list(kwargs) if name in self._signature.parameters
        }
        bound = self._signature.bind(*args, **own)
        bound.apply_defaults()
        super().__init__(**kwargs)
        layer = descriptions.describe(self._op_name).LAYER
        tables = _layer_tables(layer)
        self._sizes = [int(bound.arguments[t["size"]]) for t in tables]
        for table, size in zip(tables, self._sizes, strict=True):
            setattr(self, table["size"], size)
        fixed = layer.get("fixed", {})
        self._attrs = {
            a.name: fixed[a.name] if a.name in fixed else bound.arguments[a.name]
            for a in _SPECS[self._op_name].attrs
        }
        for name, value in self._attrs.items():
            if name not in fixed:
                setattr(self, name, value)
        initial = bound.arguments["initial"]
        several = len(tables) > 1
        if initial is not None and several and len(initial) != len(tables):
            raise ValueError(f"initial needs {len(tables)} sequences, one a table")
        self.initial = []
        for i, (table, size) in enumerate(zip(tables, self._sizes, strict=True)):
            entries = table["size_to_entries"](size)
            given = None if initial is None else initial[i] if several else initial
            values = table["initial"](entries, self._attrs) if given is None else given
            values = [float(v) for v in values]
            if len(values) != entries:
                raise ValueError(f"initial needs {entries} values; got {len(values)}")
            self.initial.append(values)

    def build(self, input_shape):
        """Creates each table's weight."""
        tables = _layer_tables(descriptions.describe(self._op_name).LAYER)
        for table, values in zip(tables, self.initial, strict=True):
            weight = self.add_weight(
                name=table["weight"],
                shape=(len(values),),
                initializer=keras.initializers.Constant(values),
            )
            setattr(self, table["variable"], weight)

    def call(self, inputs):
        """Applies the op with the current tables."""
        tables = _layer_tables(descriptions.describe(self._op_name).LAYER)
        values = [keras.ops.convert_to_tensor(getattr(self, t["variable"])) for t in tables]
        return _binding_call(self._op_name, inputs, values, self._attrs)

    def compute_output_shape(self, input_shape):
        """The op's output shape."""
        description = descriptions.describe(self._op_name)
        sizes = tuple(len(values) for values in self.initial)
        return descriptions.output_shape(
            description, input_shape, sizes if len(sizes) > 1 else sizes[0], self._attrs
        )

    def get_config(self) -> dict[str, Any]:
        """The layer's configuration, for saving (the tables are weights)."""
        layer = descriptions.describe(self._op_name).LAYER
        tables = _layer_tables(layer)
        fixed = layer.get("fixed", {})
        initial = [list(v) for v in self.initial]
        return {
            **super().get_config(),
            **{t["size"]: size for t, size in zip(tables, self._sizes, strict=True)},
            **{name: value for name, value in self._attrs.items() if name not in fixed},
            "initial": initial if len(tables) > 1 else initial[0],
        }


def _binding_call(op_name: str, inputs, tables, attrs: dict[str, Any]):
    """The backend's op, its tables where its signature puts them."""
    description = descriptions.describe(op_name)
    spec = _SPECS[op_name]
    arguments = {spec.data: inputs, **dict(zip(spec.table_names, tables, strict=True)), **attrs}
    positional = [arguments.pop(name) for name in description.SIGNATURE]
    return getattr(_ops(), op_name)(*positional, **arguments)


def _make_layer(spec: _registry.OpSpec) -> type | None:
    description = descriptions.describe(spec.name)
    layer = getattr(description, "LAYER", None)
    if layer is None:
        return None
    namespace = {"_op_name": spec.name, "__doc__": _layer_doc(spec, description, layer)}
    if layer.get("fixed_table"):
        cls = type(layer["name"], (_FixedTableLayer,), namespace)
    else:
        defaults = {**getattr(description, "DEFAULTS", {}), **layer.get("defaults", {})}
        parameters = [
            inspect.Parameter(t["size"], inspect.Parameter.POSITIONAL_OR_KEYWORD)
            for t in _layer_tables(layer)
        ]
        parameters += [
            inspect.Parameter(
                a.name,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                default=defaults.get(a.name, inspect.Parameter.empty),
            )
            for a in spec.attrs
            if a.name not in layer.get("fixed", {})
        ]
        parameters.append(
            inspect.Parameter("initial", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)
        )
        namespace["_signature"] = inspect.Signature(parameters)
        cls = type(layer["name"], (_TrainedTableLayer,), namespace)
    cls.__module__ = __name__
    return keras.saving.register_keras_serializable(package="constmem")(cls)


def _layer_doc(spec: _registry.OpSpec, description, layer: dict) -> str:
    function = f"`constmem.<framework>.{spec.name}`"
    if layer.get("fixed_table"):
        return (
            f"{function} with a {spec.table} fixed per layer, kept in its configuration.\n\n"
            f"Args:\n  table: the op's {spec.table}.\n  source: 'attr' (default: uploaded at most"
            " once per device and content) or 'host' (a host-memory input on every call, on"
            " TensorFlow).\n  **kwargs: passed to `keras.layers.Layer`.\n"
        )
    fixed = layer.get("fixed", {})
    attrs = "".join(f"  {a.name}: the op's {a.name}.\n" for a in spec.attrs if a.name not in fixed)
    tables = _layer_tables(layer)
    names = " and ".join(t["weight"] for t in tables)
    sizes = "".join(f"  {t['size']}: the {t['weight']}'s size.\n" for t in tables)
    initial = "one sequence a table, in their order" if len(tables) > 1 else f"of the {names}"
    return (
        f"{function} with a trainable {names}.\n\n"
        f"Args:\n{sizes}{attrs}"
        f"  initial: optional starting values, {initial}.\n"
        "  **kwargs: passed to `keras.layers.Layer`.\n\n"
        f"Gradients flow to the {names} and to the input.\n"
    )


_SPECS = _registry_of_backend()
__all__ = []
for _spec in _SPECS.values():
    _layer = _make_layer(_spec)
    if _layer is not None:
        globals()[_layer.__name__] = _layer
        __all__.append(_layer.__name__)
