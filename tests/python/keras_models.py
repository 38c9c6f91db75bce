# SPDX-License-Identifier: Apache-2.0
"""Keras models of every constmem layer, trained and saved on one backend and reloaded on another,
here or in a fresh process:

    python keras_models.py train DIRECTORY SOURCE   # on $KERAS_BACKEND: model.keras, x.npy, out.npy
    python keras_models.py reload DIRECTORY...      # on $KERAS_BACKEND: <backend>.npy beside each
    python keras_models.py train DIRECTORY SOURCE reload DIRECTORY...   # one, then the other
"""

import os
import sys

import constmem.keras  # registers the layers for deserialisation
import keras
import numpy as np
from reference import frobulate_reference


def train(directory, source):
    """Trains the four layers together and saves the model with its inputs and outputs."""
    rng = np.random.default_rng(47)
    x = rng.uniform(-1, 1, (64, 16)).astype(np.float32)
    y = np.tanh(x * 3).astype(np.float32)
    table = list(range(-3, 4))
    model = keras.Sequential(
        [
            keras.Input((16,)),
            constmem.keras.Frobulate(table=table, source=source),
            constmem.keras.Polyval(degree=3),
            constmem.keras.FirFilter(taps=5),
            constmem.keras.Interpolate(knots=9, lo=-2.0, hi=2.0),
        ]
    )
    model.compile(optimizer=keras.optimizers.Adam(0.02), loss="mse")
    first = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=20, batch_size=16, verbose=0)
    assert model.evaluate(x, y, verbose=0) < first, "training reduced the loss"
    frobulated = keras.ops.convert_to_numpy(model.layers[0](x))
    np.testing.assert_array_equal(frobulated, frobulate_reference(x, table))
    model.save(os.path.join(directory, "model.keras"))
    np.save(os.path.join(directory, "x.npy"), x)
    np.save(os.path.join(directory, "out.npy"), model.predict(x, verbose=0))


def reload(*directories):
    """Loads each saved model and saves its outputs on this backend beside it."""
    for directory in directories:
        model = keras.models.load_model(os.path.join(directory, "model.keras"))
        x = np.load(os.path.join(directory, "x.npy"))
        outputs = model.predict(x, verbose=0)
        np.save(os.path.join(directory, keras.backend.backend() + ".npy"), outputs)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[0] == "train":
        train(*args[1:3])
        args = args[3:]
    if args:
        assert args[0] == "reload", args
        reload(*args[1:])
