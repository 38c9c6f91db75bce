# SPDX-License-Identifier: Apache-2.0
"""Keras 3 layers over constmem's ops (TensorFlow backend), serialisable in `.keras` files.

import keras
import constmem.keras

model = keras.Sequential([keras.Input((8,)), constmem.keras.Frobulate(table=[1, 2, 3])])
model.save("model.keras")          # reloads wherever `constmem.keras` has been imported
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import keras
import numpy as np

from constmem.frobulate import frobulate


def _require_tensorflow_backend() -> None:
    backend = keras.backend.backend()
    if backend != "tensorflow":
        raise RuntimeError(
            f"constmem.keras needs Keras's TensorFlow backend; this process uses '{backend}' "
            "(set KERAS_BACKEND=tensorflow before importing keras)"
        )


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
        _require_tensorflow_backend()
        super().__init__(**kwargs)
        if source not in ("attr", "host"):
            raise ValueError(f"source must be 'attr' or 'host'; got {source!r}")
        self.table = [int(v) for v in np.asarray(table).reshape(-1)]
        self.source = source

    def call(self, inputs):
        """Applies the op to `inputs` (float32 or float64, any shape)."""
        if self.source == "host":
            import tensorflow as tf

            return frobulate(inputs, tf.constant(self.table, tf.int32), source="host")
        return frobulate(inputs, self.table, source="attr")

    def compute_output_shape(self, input_shape):
        """The input's shape."""
        return input_shape

    def get_config(self) -> dict[str, Any]:
        """The layer's configuration, table included, for saving."""
        return {**super().get_config(), "table": list(self.table), "source": self.source}
