# SPDX-License-Identifier: Apache-2.0
"""Keras 3 layers over constmem's ops, on the TensorFlow, JAX and PyTorch backends.

import keras
import constmem.keras

model = keras.Sequential([keras.Input((8,)), constmem.keras.Frobulate(table=[1, 2, 3])])
model.save("model.keras")          # reloads wherever `constmem.keras` has been imported

Frobulate has a fixed table; Polyval and FirFilter train their coefficients and taps. Each layer
calls the op of the backend Keras runs on (`constmem.tensorflow`, `constmem.jax` or
`constmem.torch`), so one `.keras` file trains and reloads on each, with the same results.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import keras
import numpy as np

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


def _value(variable):
    """A weight as the backend's own tensor."""
    return keras.ops.convert_to_tensor(variable)


@keras.saving.register_keras_serializable(package="constmem")
class Frobulate(keras.layers.Layer):
    """`constmem.frobulate` with a table fixed per layer: adds every entry to every element.

    Args:
      table: 1 to 16,384 integers that fit int32, kept in the layer's config.
      source: "attr" (default: uploaded at most once per device and content) or "host" (the
        table travels as a host-memory input on every call).
      **kwargs: passed to `keras.layers.Layer`.

    The gradient with respect to the input is the incoming gradient; the layer has no weights.

    """

    def __init__(self, table: Sequence[int], source: str = "attr", **kwargs: Any) -> None:
        _require_supported_backend()
        super().__init__(**kwargs)
        if source not in ("attr", "host"):
            raise ValueError(f"source must be 'attr' or 'host'; got {source!r}")
        self.table = [int(v) for v in np.asarray(table).reshape(-1)]
        self.source = source

    def call(self, inputs):
        """Applies the op to `inputs` (float32 or float64, any shape)."""
        ops = _ops()
        if keras.backend.backend() != "tensorflow":  # a static table: the attr form's equal
            return ops.frobulate(inputs, self.table)
        if self.source == "host":
            import tensorflow as tf

            return ops.frobulate(inputs, tf.constant(self.table, tf.int32), source="host")
        return ops.frobulate(inputs, self.table, source="attr")

    def compute_output_shape(self, input_shape):
        """The input's shape."""
        return input_shape

    def get_config(self) -> dict[str, Any]:
        """The layer's configuration, table included, for saving."""
        return {**super().get_config(), "table": list(self.table), "source": self.source}


@keras.saving.register_keras_serializable(package="constmem")
class Polyval(keras.layers.Layer):
    """`constmem.polyval` with trainable coefficients: y = polyval(coefficients, x) elementwise.

    Args:
      degree: the polynomial's degree; the layer holds degree + 1 coefficients, highest degree
        first, initialised to `initial` or to the identity polynomial (x).
      initial: optional starting coefficients (length degree + 1).
      **kwargs: passed to `keras.layers.Layer`.

    The coefficients travel as an input on every call (so they can change with each step), and
    gradients flow to both them and the input.

    """

    def __init__(self, degree: int, initial: Sequence[float] | None = None, **kwargs: Any) -> None:
        _require_supported_backend()
        super().__init__(**kwargs)
        self.degree = int(degree)
        if initial is None:
            initial = [0.0] * (self.degree - 1) + [1.0, 0.0] if self.degree >= 1 else [0.0]
        self.initial = [float(v) for v in initial]
        if len(self.initial) != self.degree + 1:
            raise ValueError(f"initial needs {self.degree + 1} coefficients; got {len(initial)}")

    def build(self, input_shape):
        """Creates the coefficients."""
        self.coefficients = self.add_weight(
            name="coefficients",
            shape=(self.degree + 1,),
            initializer=keras.initializers.Constant(self.initial),
        )

    def call(self, inputs):
        """Evaluates the polynomial at every element of `inputs`."""
        return _ops().polyval(_value(self.coefficients), inputs)

    def compute_output_shape(self, input_shape):
        """The input's shape."""
        return input_shape

    def get_config(self) -> dict[str, Any]:
        """The layer's configuration, for saving (the coefficients are weights)."""
        return {**super().get_config(), "degree": self.degree, "initial": list(self.initial)}


@keras.saving.register_keras_serializable(package="constmem")
class FirFilter(keras.layers.Layer):
    """`constmem.fir_filter` with trainable taps along the last axis.

    Args:
      taps: the number of taps; initialised to `initial` or to a unit impulse at the centre.
      padding: "SAME" (as many outputs as samples) or "VALID".
      initial: optional starting taps.
      **kwargs: passed to `keras.layers.Layer`.

    Gradients flow to the taps and to the input.

    """

    def __init__(
        self,
        taps: int,
        padding: str = "SAME",
        initial: Sequence[float] | None = None,
        **kwargs: Any,
    ) -> None:
        _require_supported_backend()
        super().__init__(**kwargs)
        self.taps = int(taps)
        self.padding = padding
        if initial is None:
            initial = [0.0] * self.taps
            initial[(self.taps - 1) // 2] = 1.0
        self.initial = [float(v) for v in initial]
        if len(self.initial) != self.taps:
            raise ValueError(f"initial needs {self.taps} taps; got {len(initial)}")

    def build(self, input_shape):
        """Creates the taps."""
        self.kernel = self.add_weight(
            name="taps", shape=(self.taps,), initializer=keras.initializers.Constant(self.initial)
        )

    def call(self, inputs):
        """Filters every row of `inputs` (its last axis)."""
        return _ops().fir_filter(inputs, _value(self.kernel), padding=self.padding)

    def compute_output_shape(self, input_shape):
        """The input's shape, the last dimension as many outputs as the padding leaves."""
        if self.padding == "SAME" or input_shape[-1] is None:
            return input_shape
        return (*input_shape[:-1], max(input_shape[-1] - self.taps + 1, 0))

    def get_config(self) -> dict[str, Any]:
        """The layer's configuration, for saving (the taps are weights)."""
        return {
            **super().get_config(),
            "taps": self.taps,
            "padding": self.padding,
            "initial": list(self.initial),
        }


@keras.saving.register_keras_serializable(package="constmem")
class Interpolate(keras.layers.Layer):
    """`constmem.interpolate` with trainable knots: a learned piecewise-linear curve over [lo, hi].

    Args:
      knots: the number of knots (2 to 16,384), equally spaced over [lo, hi]; initialised to
        `initial` or to the identity (y = x inside the range, clamped outside).
      lo, hi: the range the knots span.
      initial: optional starting knot values.
      **kwargs: passed to `keras.layers.Layer`.

    Gradients flow to the knots and to the input.

    """

    def __init__(
        self,
        knots: int,
        lo: float = -1.0,
        hi: float = 1.0,
        initial: Sequence[float] | None = None,
        **kwargs: Any,
    ) -> None:
        _require_supported_backend()
        super().__init__(**kwargs)
        self.knots = int(knots)
        self.lo, self.hi = float(lo), float(hi)
        if initial is None:
            initial = np.linspace(self.lo, self.hi, self.knots).tolist()
        self.initial = [float(v) for v in initial]
        if len(self.initial) != self.knots:
            raise ValueError(f"initial needs {self.knots} knots; got {len(initial)}")

    def build(self, input_shape):
        """Creates the knots."""
        self.values = self.add_weight(
            name="knots", shape=(self.knots,), initializer=keras.initializers.Constant(self.initial)
        )

    def call(self, inputs):
        """Interpolates every element of `inputs`."""
        return _ops().interpolate(inputs, _value(self.values), self.lo, self.hi)

    def compute_output_shape(self, input_shape):
        """The input's shape."""
        return input_shape

    def get_config(self) -> dict[str, Any]:
        """The layer's configuration, for saving (the knots are weights)."""
        return {
            **super().get_config(),
            "knots": self.knots,
            "lo": self.lo,
            "hi": self.hi,
            "initial": list(self.initial),
        }
