# SPDX-License-Identifier: Apache-2.0
"""SavedModels that use the ops, loaded in a fresh process: the way they are deployed."""

import os
import subprocess
import textwrap

import constmem.tensorflow as cm
import numpy as np
import pytest
import tensorflow as tf
from reference import frobulate_reference
from subprocesses import ROOT, python_env, run_python
from tensorflow.python.tools import saved_model_utils

TABLE = np.arange(1, 101, dtype=np.int32)
DATA = np.linspace(-3.0, 3.0, 33, dtype=np.float32)


class FrobulateModel(tf.Module):
    """Frobulate with the table as an attribute and as a host input, and a serving signature."""

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def attr_table(self, x):
        return cm.frobulate(x, TABLE)

    @tf.function(
        input_signature=[tf.TensorSpec([None], tf.float32), tf.TensorSpec([None], tf.int32)]
    )
    def host_table(self, x, t):
        return cm.frobulate(x, t, source="host")

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def serve(self, x):
        return {"y": cm.frobulate(x, TABLE)}


LOAD = textwrap.dedent(
    """
    import sys
    import numpy as np
    import tensorflow as tf
    import constmem.tensorflow as cm  # nothing else: importing the package must register the ops

    loaded = tf.saved_model.load(sys.argv[1])
    data = np.linspace(-3.0, 3.0, 33, dtype=np.float32)
    np.save(sys.argv[2], loaded.attr_table(data).numpy())
    table = tf.constant(np.arange(1, 8, dtype=np.int32))
    np.save(sys.argv[3], loaded.host_table(data, table).numpy())
    """
)


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("saved") / "model")
    model = FrobulateModel()
    tf.saved_model.save(model, path, signatures={"serving_default": model.serve})
    return path


@pytest.mark.slow
def test_loads_in_a_fresh_process_after_import(saved_model, tmp_path):
    attr_out, host_out = str(tmp_path / "attr.npy"), str(tmp_path / "host.npy")
    run_python("-c", LOAD, saved_model, attr_out, host_out)
    np.testing.assert_array_equal(np.load(attr_out), frobulate_reference(DATA, TABLE))
    np.testing.assert_array_equal(np.load(host_out), frobulate_reference(DATA, TABLE[:7]))


@pytest.mark.slow
def test_without_constmem_the_error_names_the_op(saved_model):
    result = run_python(
        "-c",
        "import sys, tensorflow as tf; tf.saved_model.load(sys.argv[1])",
        saved_model,
        check=False,
    )
    assert result.returncode != 0
    assert "Constmem>Frobulate" in result.stderr


@pytest.mark.slow
def test_saved_model_cli_run_with_constmem(saved_model, tmp_path):
    inputs = tmp_path / "x.npy"
    np.save(inputs, DATA)
    outdir = tmp_path / "out"
    run_python(
        "-m",
        "constmem.saved_model_cli",
        "run",
        "--dir",
        saved_model,
        "--tag_set",
        "serve",
        "--signature_def",
        "serving_default",
        "--inputs",
        f"x={inputs}",
        "--outdir",
        str(outdir),
    )
    np.testing.assert_array_equal(np.load(outdir / "y.npy"), frobulate_reference(DATA, TABLE))


@pytest.mark.slow
def test_version_mismatch_is_a_clear_import_error(tmp_path):
    # A library whose build info names another TensorFlow is refused before it is loaded.
    import shutil

    lib = tmp_path / "_constmem_ops.so"
    shutil.copy(cm.library_path(), lib)
    (tmp_path / "_constmem_ops.json").write_text('{"tensorflow": "2.0.0", "gpu_kernels": false}')
    result = run_python(
        "-c",
        "import constmem.tensorflow",
        env=python_env(CONSTMEM_TENSORFLOW_LIBRARY=str(lib)),
        check=False,
    )
    assert result.returncode != 0
    assert "built against TensorFlow 2.0.0" in result.stderr


class ServingModel(tf.Module):
    """Every table form, one table of 2,000 entries (a constant bank on a GPU)."""

    big = np.arange(-700, 1300, dtype=np.int32)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
    def serve(self, x):
        host = cm.frobulate(x, tf.constant([5, -6, 7]), source="host")
        return {"y": cm.frobulate(cm.frobulate(host, [1, 2, 3]), self.big)}


@pytest.fixture(scope="module")
def serving_model(tmp_path_factory):
    """The saved model's path and the graph operations its signature feeds and fetches, as a C
    client looks them up."""
    path = str(tmp_path_factory.mktemp("serving") / "model")
    model = ServingModel()
    tf.saved_model.save(model, path, signatures={"serving_default": model.serve})
    serving = saved_model_utils.get_meta_graph_def(path, "serve").signature_def["serving_default"]
    names = [serving.inputs["x"].name, serving.outputs["y"].name]
    return path, *(name.split(":")[0] for name in names)


@pytest.mark.parametrize("client", ["c_api_saved_model", "cc_saved_model"])
def test_served_without_python_matches_python(client, serving_model, tmp_path):
    """TensorFlow's C API, and its C++ API (libtensorflow_cc from the wheel), serve the model."""
    # The built example: in the build directory, or where $CONSTMEM_EXAMPLES_DIR says (GPU bundle).
    examples = os.environ.get("CONSTMEM_EXAMPLES_DIR") or os.path.join(
        ROOT, os.environ.get("CONSTMEM_BUILD_DIR", "build")
    )
    program = os.path.join(examples, client)
    if not os.path.exists(program):
        pytest.skip(f"{client} is not built (scripts/build.sh)")
    model, input_op, output_op = serving_model
    data = np.random.default_rng(8).standard_normal(1031).astype(np.float32) * 100
    from_python = tf.saved_model.load(model).serve(tf.constant(data))["y"].numpy()
    data.tofile(tmp_path / "x.raw")
    # The program links TensorFlow's C library, which lives in the installed TensorFlow package: a
    # build directory sets an rpath to it, a relocated binary (the GPU bundle) needs the path.
    env = python_env()
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        p for p in [tf.sysconfig.get_lib(), env.get("LD_LIBRARY_PATH", "")] if p
    )
    result = subprocess.run(
        [
            program,
            cm.library_path(),
            model,
            input_op,
            output_op,
            str(tmp_path / "x.raw"),
            str(tmp_path / "c.raw"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    served = np.fromfile(tmp_path / "c.raw", dtype=np.float32)
    assert served.tobytes() == from_python.tobytes()
