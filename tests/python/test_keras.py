"""constmem.keras: layers trained in model.fit, saved as .keras and reloaded in a fresh process
with the same outputs, on the TensorFlow, JAX and PyTorch backends; a clear error on another."""

import numpy as np
import pytest
from reference import frobulate_reference
from subprocesses import python_env, run_python

keras = pytest.importorskip("keras")
import constmem.keras  # noqa: E402

TABLE = list(range(-20, 80))

RELOAD = """
import sys
import numpy as np
import keras
import constmem.keras  # registers the layer for deserialisation

model = keras.models.load_model(sys.argv[1])
np.save(sys.argv[3], model.predict(np.load(sys.argv[2]), verbose=0))
"""


@pytest.mark.parametrize("source", ["attr", "host"])
def test_fit_save_and_reload_in_a_fresh_process(source, tmp_path):
    rng = np.random.default_rng(41)
    x = (rng.standard_normal((64, 8)) * 4).astype(np.float32)
    y = (rng.standard_normal((64, 8))).astype(np.float32)
    model = keras.Sequential(
        [
            keras.Input((8,)),
            constmem.keras.Frobulate(table=TABLE, source=source),
            keras.layers.LayerNormalization(),  # trainable, elementwise: no matrix product needed
        ]
    )
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    before = model.layers[-1].get_weights()[0].copy()
    history = model.fit(x, y, epochs=3, batch_size=16, verbose=0)
    assert not np.array_equal(model.layers[-1].get_weights()[0], before), "the weights trained"
    assert np.isfinite(history.history["loss"]).all()
    frobulated = model.layers[0](x).numpy()
    np.testing.assert_array_equal(frobulated, frobulate_reference(x, TABLE))

    path = tmp_path / "model.keras"
    model.save(path)
    np.save(tmp_path / "x.npy", x)
    run_python("-c", RELOAD, str(path), str(tmp_path / "x.npy"), str(tmp_path / "out.npy"))
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), model.predict(x, verbose=0))


def test_an_unsupported_backend_gets_a_clear_error(monkeypatch):
    # As under KERAS_BACKEND=numpy: the layer refuses to be built, saying what to set.
    monkeypatch.setattr(keras.backend, "backend", lambda: "numpy")
    with pytest.raises(RuntimeError, match=r"TensorFlow, JAX and PyTorch backends.*'numpy'"):
        constmem.keras.Frobulate(table=[1])


TRAIN = """
import sys
import numpy as np
import keras
import constmem.keras
from reference import frobulate_reference

rng = np.random.default_rng(47)
x = rng.uniform(-1, 1, (64, 16)).astype(np.float32)
y = np.tanh(x * 3).astype(np.float32)
table = list(range(-3, 4))
model = keras.Sequential([
    keras.Input((16,)),
    constmem.keras.Frobulate(table=table),
    constmem.keras.Polyval(degree=3),
    constmem.keras.FirFilter(taps=5),
    constmem.keras.Interpolate(knots=9, lo=-2.0, hi=2.0),
])
model.compile(optimizer=keras.optimizers.Adam(0.02), loss="mse")
first = model.evaluate(x, y, verbose=0)
model.fit(x, y, epochs=20, batch_size=16, verbose=0)
assert model.evaluate(x, y, verbose=0) < first, "training reduced the loss"
frobulated = keras.ops.convert_to_numpy(model.layers[0](x))
np.testing.assert_array_equal(frobulated, frobulate_reference(x, table))
model.save(sys.argv[1])
np.save(sys.argv[2], x)
np.save(sys.argv[3], model.predict(x, verbose=0))
"""


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_a_model_trains_on_each_backend_and_reloads_on_every_one(backend, tmp_path):
    # The layers call the backend's own op; every backend computes the same bits from the file.
    pytest.importorskip(backend)
    path, x, out = tmp_path / "model.keras", tmp_path / "x.npy", tmp_path / "out.npy"
    run_python("-c", TRAIN, str(path), str(x), str(out), env=python_env(KERAS_BACKEND=backend))
    trained = np.load(out)
    for reload_backend in ("tensorflow", "jax", "torch"):
        reloaded = tmp_path / f"{reload_backend}.npy"
        run_python(
            "-c",
            RELOAD,
            str(path),
            str(x),
            str(reloaded),
            env=python_env(KERAS_BACKEND=reload_backend),
        )
        np.testing.assert_array_equal(np.load(reloaded), trained, err_msg=reload_backend)


@pytest.mark.parametrize(
    "layer",
    [
        lambda: constmem.keras.Polyval(degree=3),
        lambda: constmem.keras.FirFilter(taps=5),
        lambda: constmem.keras.FirFilter(taps=4, padding="VALID"),
        lambda: constmem.keras.Interpolate(knots=9, lo=-1.0, hi=1.0),
    ],
    ids=["polyval", "fir_same", "fir_valid", "interpolate"],
)
def test_trainable_layers_fit_save_and_reload(layer, tmp_path):
    # Their coefficients or taps are weights: fit moves them towards a target the op can express.
    rng = np.random.default_rng(43)
    x = rng.uniform(-1, 1, (64, 16)).astype(np.float32)
    made = layer()
    target_layer = layer()
    target_layer.build(x.shape)
    start = target_layer.get_weights()[0]
    target_layer.set_weights([(start + rng.normal(0, 0.5, start.shape)).astype(np.float32)])
    y = target_layer(x).numpy()
    model = keras.Sequential([keras.Input((16,)), made])
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss="mse")
    first = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=30, batch_size=16, verbose=0)
    assert model.evaluate(x, y, verbose=0) < 0.5 * first, "training reduced the loss"

    path = tmp_path / "model.keras"
    model.save(path)
    np.save(tmp_path / "x.npy", x)
    run_python("-c", RELOAD, str(path), str(tmp_path / "x.npy"), str(tmp_path / "out.npy"))
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), model.predict(x, verbose=0))
