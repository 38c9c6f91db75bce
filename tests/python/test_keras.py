"""constmem.keras: layers trained in model.fit, saved as .keras and reloaded with the same outputs;
a model saved on any of the TensorFlow, JAX and PyTorch backends reloads on every one of them,
on each other backend in a process that never saw it; a clear error on another backend."""

import importlib.util
import os

import numpy as np
import pytest
from reference import frobulate_reference
from subprocesses import python_env, run_python

keras = pytest.importorskip("keras")
import constmem.keras  # noqa: E402
import keras_models  # noqa: E402

TABLE = list(range(-20, 80))
BACKENDS = ("tensorflow", "jax", "torch")

KERAS_MODELS = os.path.join(os.path.dirname(__file__), "keras_models.py")


def saved_and_reloaded(model, x, tmp_path):
    """The model's predictions after a save to .keras and a load."""
    path = tmp_path / "model.keras"
    model.save(path)
    return keras.models.load_model(path).predict(x, verbose=0)


@pytest.mark.parametrize("source", ["attr", "host"])
def test_frobulate_trains_the_layers_after_it_and_reloads(source, tmp_path):
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
    np.testing.assert_array_equal(
        saved_and_reloaded(model, x, tmp_path), model.predict(x, verbose=0)
    )


def test_an_unsupported_backend_gets_a_clear_error(monkeypatch):
    # As under KERAS_BACKEND=numpy: the layer refuses to be built, saying what to set.
    monkeypatch.setattr(keras.backend, "backend", lambda: "numpy")
    with pytest.raises(RuntimeError, match=r"TensorFlow, JAX and PyTorch backends.*'numpy'"):
        constmem.keras.Frobulate(table=[1])


@pytest.mark.slow
def test_models_saved_on_each_backend_reload_on_every_one(tmp_path):
    # A deployment loads the file in a fresh process, perhaps on another backend: the layers call
    # that backend's own op, and every backend computes the same bits. The TensorFlow model reads
    # its Frobulate table as a host input, the others as a static table (TensorFlow's attr form).
    # One process a backend trains, and the last to train reloads every model at once; the others
    # reload in fresh processes of their own, this process's backend here.
    own = keras.backend.backend()
    backends = [b for b in BACKENDS if importlib.util.find_spec(b) is not None]
    backends.sort(key=lambda b: b != own)  # this process's own first, then the others
    directories = [str(tmp_path / backend) for backend in backends]
    for directory in directories:
        os.mkdir(directory)
    keras_models.train(directories[0], "host" if own == "tensorflow" else "attr")
    for i, backend in enumerate(backends[1:], start=1):
        last = i == len(backends) - 1
        then_reload = ["reload", *directories] if last else []
        env = python_env(KERAS_BACKEND=backend)
        run_python(KERAS_MODELS, "train", directories[i], "attr", *then_reload, env=env)
    for backend in backends[1:-1]:
        run_python(KERAS_MODELS, "reload", *directories, env=python_env(KERAS_BACKEND=backend))
    keras_models.reload(*directories)
    for directory in directories:
        trained = np.load(os.path.join(directory, "out.npy"))
        for backend in backends:
            reloaded = np.load(os.path.join(directory, backend + ".npy"))
            np.testing.assert_array_equal(reloaded, trained, err_msg=f"{directory} on {backend}")


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
    np.testing.assert_array_equal(
        saved_and_reloaded(model, x, tmp_path), model.predict(x, verbose=0)
    )


def test_a_layer_trains_each_of_its_tables(tmp_path):
    # SeparableFilter's row and column taps are two weights: fit moves both towards a target.
    rng = np.random.default_rng(44)
    x = rng.uniform(-1, 1, (32, 6, 7, 1)).astype(np.float32)

    def made():
        return constmem.keras.SeparableFilter(row_taps=3, column_taps=5, layout="channels_last")

    target_layer = made()
    target_layer.build(x.shape)
    starts = target_layer.get_weights()
    assert [w.shape for w in starts] == [(3,), (5,)]
    target_layer.set_weights([(w + rng.normal(0, 0.5, w.shape)).astype(np.float32) for w in starts])
    y = target_layer(x).numpy()
    layer = made()
    model = keras.Sequential([keras.Input((6, 7, 1)), layer])
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss="mse")
    first = model.evaluate(x, y, verbose=0)
    before = [w.copy() for w in layer.get_weights()]
    model.fit(x, y, epochs=30, batch_size=8, verbose=0)
    assert model.evaluate(x, y, verbose=0) < 0.5 * first, "training reduced the loss"
    for w, start in zip(layer.get_weights(), before, strict=True):
        assert not np.array_equal(w, start), "each table trained"
    np.testing.assert_array_equal(
        saved_and_reloaded(model, x, tmp_path), model.predict(x, verbose=0)
    )
    with pytest.raises(ValueError, match="initial needs 2 sequences"):
        constmem.keras.SeparableFilter(row_taps=3, column_taps=5, initial=[[0.0, 1.0, 0.0]])
