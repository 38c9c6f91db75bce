# SPDX-License-Identifier: Apache-2.0
"""Keras 3 layers over constmem's ops, on the TensorFlow, JAX and PyTorch backends.

import keras
import constmem.keras

model = keras.Sequential([keras.Input((8,)), constmem.keras.Frobulate(table=[1, 2, 3])])
model.save("model.keras")          # reloads wherever `constmem.keras` has been imported

Each op whose description (constmem.ops) has a LAYER gets one, made from it: a layer that trains
its table (`Polyval(degree=3)`, `FirFilter(taps=5)`, `Interpolate(knots=9, lo=-1.0, hi=1.0)`: the
table's size, the op's attributes, optional starting values `initial`), or one whose table is
fixed in its configuration (`Frobulate(table=[...])`). Each layer calls the op of the backend
Keras runs on (`constmem.tensorflow`, `constmem.jax` or `constmem.torch`), so one `.keras` file
trains and reloads on each, with the same results.
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


class _TrainedTableLayer(keras.layers.Layer):
    """An op whose table is a trainable weight, passed as a tensor on every call."""

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
        self._size = int(bound.arguments[layer["size"]])
        setattr(self, layer["size"], self._size)
        self._attrs = {a.name: bound.arguments[a.name] for a in _SPECS[self._op_name].attrs}
        for name, value in self._attrs.items():
            setattr(self, name, value)
        entries = layer["size_to_entries"](self._size)
        initial = bound.arguments["initial"]
        if initial is None:
            initial = layer["initial"](entries, self._attrs)
        self.initial = [float(v) for v in initial]
        if len(self.initial) != entries:
            raise ValueError(f"initial needs {entries} values; got {len(initial)}")

    def build(self, input_shape):
        """Creates the table's weight."""
        layer = descriptions.describe(self._op_name).LAYER
        weight = self.add_weight(
            name=layer["weight"],
            shape=(len(self.initial),),
            initializer=keras.initializers.Constant(self.initial),
        )
        setattr(self, layer.get("variable", layer["weight"]), weight)

    def call(self, inputs):
        """Applies the op with the current table."""
        layer = descriptions.describe(self._op_name).LAYER
        table = keras.ops.convert_to_tensor(getattr(self, layer.get("variable", layer["weight"])))
        return _binding_call(self._op_name, inputs, table, self._attrs)

    def compute_output_shape(self, input_shape):
        """The op's output shape."""
        description = descriptions.describe(self._op_name)
        return descriptions.output_shape(description, input_shape, len(self.initial), self._attrs)

    def get_config(self) -> dict[str, Any]:
        """The layer's configuration, for saving (the table is a weight)."""
        layer = descriptions.describe(self._op_name).LAYER
        return {
            **super().get_config(),
            layer["size"]: self._size,
            **self._attrs,
            "initial": list(self.initial),
        }


def _binding_call(op_name: str, inputs, table, attrs: dict[str, Any]):
    """The backend's op, its table first or second as its signature says."""
    description = descriptions.describe(op_name)
    spec = _SPECS[op_name]
    arguments = {spec.data: inputs, spec.table: table, **attrs}
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
        parameters = [inspect.Parameter(layer["size"], inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        parameters += [
            inspect.Parameter(
                a.name,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                default=defaults.get(a.name, inspect.Parameter.empty),
            )
            for a in spec.attrs
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
    attrs = "".join(f"  {a.name}: the op's {a.name}.\n" for a in spec.attrs)
    return (
        f"{function} with a trainable {spec.table}.\n\n"
        f"Args:\n  {layer['size']}: the {spec.table}'s size.\n{attrs}"
        f"  initial: optional starting values of the {spec.table}.\n"
        "  **kwargs: passed to `keras.layers.Layer`.\n\n"
        f"Gradients flow to the {spec.table} and to the input.\n"
    )


_SPECS = _registry_of_backend()
__all__ = []
for _spec in _SPECS.values():
    _layer = _make_layer(_spec)
    if _layer is not None:
        globals()[_layer.__name__] = _layer
        __all__.append(_layer.__name__)
