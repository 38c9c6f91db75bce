# SPDX-License-Identifier: Apache-2.0
"""Frobulate through TensorFlow: every variant, every shape class, eager and tf.function, the
gradient, SavedModel and every error, on the CPU and on each GPU TensorFlow sees."""

import os

import constmem.tensorflow as cm
import numpy as np
import pytest
import tensorflow as tf
from reference import (
    frobulate_float64,
    frobulate_reference,
    random_case,
    special_values,
)
from subprocesses import python_env, run_python

SOURCES = ["input", "host", "attr"]
DTYPES = [np.float32, np.float64]
SHAPES = [(), (0,), (0, 3), (1,), (7,), (3, 5, 7), (1031,), ((1 << 20) + 5,)]


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_matches_numpy_eager(device, source, dtype, shape):
    rng = np.random.default_rng(abs(hash((source, np.dtype(dtype).name, shape))) % 2**32)
    data, table = random_case(rng, shape, dtype, table_size=int(rng.integers(1, 200)))
    with tf.device(device):
        out = cm.frobulate(data, table if source == "attr" else tf.constant(table), source=source)
    assert out.shape == data.shape and out.dtype == dtype
    np.testing.assert_array_equal(out.numpy(), frobulate_reference(data, table))
    np.testing.assert_allclose(out.numpy(), frobulate_float64(data, table), rtol=1e-5, atol=1e-2)


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("table_size", [1, 100, 1024, 1025, 4096, 4097, 16384, 16385, 70000])
def test_table_sizes_in_tf_function(device, source, table_size):
    rng = np.random.default_rng(table_size)
    data, table = random_case(rng, (4099,), np.float32, table_size)

    if source == "attr":

        @tf.function
        def run(x):
            return cm.frobulate(x, table, source="attr")

        with tf.device(device):
            out = run(tf.constant(data))
    else:

        @tf.function
        def run(x, t):
            return cm.frobulate(x, t, source=source)

        with tf.device(device):
            out = run(tf.constant(data), tf.constant(table))
    np.testing.assert_array_equal(out.numpy(), frobulate_reference(data, table))


@pytest.mark.parametrize("source", SOURCES)
def test_output_reuses_an_input_buffer_only_when_nothing_else_reads_it(device, source):
    # The kernels hand data's buffer to the output when TensorFlow allows it (as its own
    # elementwise ops do): a chain must still be right, and a tensor read elsewhere untouched.
    rng = np.random.default_rng(7)
    data, table = random_case(rng, (4099,), np.float32, 100)
    half, quarter = np.float32(0.5), np.float32(0.25)

    @tf.function
    def run(x, t):
        table_arg = table if source == "attr" else t
        chained = cm.frobulate(
            cm.frobulate(x + half, table_arg, source=source), table_arg, source=source
        )
        shared = x + quarter  # read by Frobulate and returned: must not be overwritten
        return chained, shared, cm.frobulate(shared, table_arg, source=source)

    with tf.device(device):
        x = tf.constant(data)
        chained, shared, from_shared = run(x, tf.constant(table))
        eager_out = cm.frobulate(
            x, table if source == "attr" else tf.constant(table), source=source
        )
    np.testing.assert_array_equal(
        chained.numpy(), frobulate_reference(frobulate_reference(data + half, table), table)
    )
    np.testing.assert_array_equal(shared.numpy(), data + quarter)
    np.testing.assert_array_equal(from_shared.numpy(), frobulate_reference(data + quarter, table))
    np.testing.assert_array_equal(eager_out.numpy(), frobulate_reference(data, table))
    np.testing.assert_array_equal(x.numpy(), data)  # the eager input is left as it was


def test_rounding_is_left_to_right_in_the_data_type(device):
    data = np.array([2.0**24], dtype=np.float32)
    with tf.device(device):
        out = cm.frobulate(data, tf.constant([1, 1], dtype=tf.int32))
    assert out.numpy()[0] == np.float32(2.0**24)  # each +1 rounds away; (+2) at once would not


def test_shape_function_keeps_static_shape():
    @tf.function(
        input_signature=[tf.TensorSpec([None, 3], tf.float64), tf.TensorSpec([None], tf.int32)]
    )
    def run(x, t):
        out = cm.frobulate(x, t)
        assert out.shape.as_list() == [None, 3]
        return out

    out = run(tf.ones([2, 3], tf.float64), tf.constant([1, 2], tf.int32))
    np.testing.assert_array_equal(out.numpy(), np.full([2, 3], 4.0))


@pytest.mark.parametrize("source", SOURCES)
def test_gradient_with_respect_to_data_is_the_incoming_gradient(source):
    rng = np.random.default_rng(3)
    data, table = random_case(rng, (3, 4), np.float64, 10)

    def f(x):
        return cm.frobulate(x, table if source == "attr" else tf.constant(table), source=source)

    theoretical, numerical = tf.test.compute_gradient(f, [tf.constant(data)])
    np.testing.assert_allclose(theoretical[0], np.eye(12), atol=1e-12)
    np.testing.assert_allclose(numerical[0], np.eye(12), atol=1e-6)


def test_table_has_no_gradient():
    table = tf.constant([1, 2, 3], tf.int32)
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        tape.watch(table)
        y = cm.frobulate(x, table)
    dx, dtable = tape.gradient(y, [x, table], output_gradients=tf.constant([2.0, 3.0]))
    np.testing.assert_array_equal(dx.numpy(), [2.0, 3.0])
    assert dtable is None


def test_saved_model_round_trip(tmp_path):
    table = np.arange(1, 101, dtype=np.int32)

    class Model(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def attr_table(self, x):
            return cm.frobulate(x, table)

        @tf.function(
            input_signature=[tf.TensorSpec([None], tf.float32), tf.TensorSpec([None], tf.int32)]
        )
        def input_table(self, x, t):
            return cm.frobulate(x, t, source="host")

    path = str(tmp_path / "model")
    tf.saved_model.save(Model(), path)
    loaded = tf.saved_model.load(path)  # the op library is already loaded in this process
    data = np.random.default_rng(5).standard_normal(33).astype(np.float32)
    np.testing.assert_array_equal(loaded.attr_table(data).numpy(), frobulate_reference(data, table))
    np.testing.assert_array_equal(
        loaded.input_table(data, tf.constant(table[:7])).numpy(),
        frobulate_reference(data, table[:7]),
    )


def assert_invalid(fn, *fragments):
    with pytest.raises(tf.errors.InvalidArgumentError) as error:
        fn()
    for fragment in fragments:
        assert fragment in str(error.value), str(error.value)


def check_next_call_is_right(device):
    data = np.array([1.5, -2.0], np.float32)
    with tf.device(device):
        out = cm.frobulate(data, tf.constant([3, 4], tf.int32))
    np.testing.assert_array_equal(out.numpy(), [8.5, 5.0])


@pytest.mark.parametrize("source", SOURCES)
def test_errors_are_invalid_argument_and_the_process_carries_on(device, source):
    data = np.ones(4, np.float32)

    def call(table, x=data):
        with tf.device(device):
            t = table if source == "attr" else tf.constant(table)
            return cm.frobulate(x, t, source=source)

    assert_invalid(lambda: call(np.ones((2, 2), np.int32)), "table", "rank")
    assert_invalid(lambda: call(np.zeros(0, np.int32)), "table", "1 to 1048576", "got 0")
    assert_invalid(lambda: call(np.ones(1048577, np.int32)), "table", "1 to 1048576", "1048577")
    assert_invalid(lambda: call(np.ones(3, np.float32)), "table", "int32")
    assert_invalid(lambda: call(np.ones(3, np.int32), x=np.ones(3, np.int32)), "data", "float32")
    check_next_call_is_right(device)


@pytest.mark.parametrize("source", ["input", "host"])
def test_tensor_tables_must_be_int32_and_sequences_are_converted(device, source):
    # The rule of every framework: a tensor table has the op's table dtype exactly; a Python or
    # NumPy sequence of integers that fit int32 is converted.
    data = np.array([0.5, 1.5], np.float32)
    with tf.device(device):
        out = cm.frobulate(data, np.arange(5, dtype=np.int64), source=source)
        np.testing.assert_array_equal(out.numpy(), frobulate_reference(data, np.arange(5)))

        @tf.function(input_signature=[tf.TensorSpec([None], tf.int64)])
        def run(t):
            return cm.frobulate(data, t, source=source)

        with pytest.raises(tf.errors.InvalidArgumentError, match="table must be int32; got int64"):
            run(tf.constant([2, 3], tf.int64))
    assert_invalid(lambda: cm.frobulate(data, tf.constant([2], tf.int64)), "must be int32")
    assert_invalid(lambda: cm.frobulate(data, tf.constant([1.0])), "int32", "float32")
    assert_invalid(lambda: cm.frobulate(data, np.array([2**31], np.int64)), "fit int32")
    check_next_call_is_right(device)


def test_library_is_loaded_once_at_import():
    import importlib

    import constmem.tensorflow._loader as loader

    assert os.path.exists(cm.library_path())
    assert loader._ops is not None  # loaded by `import constmem.tensorflow`
    assert loader.ops() is loader.ops()
    importlib.reload(cm)  # a re-import does not load it again
    assert loader.ops() is loader._ops
    info = cm.build_info()
    assert info["tensorflow"] == tf.__version__ and isinstance(info["gpu_kernels"], bool)


def test_attr_tables_accept_any_integer_array_within_int32(device):
    data = np.array([0.5, 1.5], np.float32)
    with tf.device(device):
        out = cm.frobulate(data, np.array([2**31 - 1, -(2**31)], np.int64))
    np.testing.assert_array_equal(
        out.numpy(), frobulate_reference(data, np.array([2**31 - 1, -(2**31)], np.int32))
    )
    assert_invalid(lambda: cm.frobulate(data, np.array([2**31], np.int64)), "fit int32")


def test_upload_stats_names_every_counter():
    stats = cm.upload_stats()
    assert {
        "upload_from_device",
        "upload_from_pinned_host",
        "upload_from_pageable_host",
        "upload_skipped",
        "by_value_launch",
        "staging_released_early",
    } <= set(stats)
    assert all(isinstance(v, int) and v >= 0 for v in stats.values())


def test_library_path_can_be_overridden(monkeypatch):
    monkeypatch.setenv("CONSTMEM_TENSORFLOW_LIBRARY", "/opt/elsewhere/_constmem_ops.so")
    assert cm.library_path() == "/opt/elsewhere/_constmem_ops.so"


@pytest.mark.parametrize("isa", ["portable", "avx2"])
def test_cpu_kernel_variants_agree_bitwise(isa, tmp_path):
    # The op picks its CPU instruction set at load; a process capped to another set must give the
    # same bits (and the capped sets are what CPUs without AVX-512 run).
    rng = np.random.default_rng(11)
    data, table = random_case(rng, (3, 1237), np.float32, 100)
    np.save(tmp_path / "data.npy", data)
    np.save(tmp_path / "table.npy", table)
    code = (
        "import sys, numpy as np, tensorflow as tf, constmem.tensorflow as cm\n"
        "d, t = np.load(sys.argv[1]), np.load(sys.argv[2])\n"
        "with tf.device('/CPU:0'):\n"
        "    np.save(sys.argv[3], cm.frobulate(d, tf.constant(t)).numpy())\n"
    )
    run_python(
        "-c",
        code,
        str(tmp_path / "data.npy"),
        str(tmp_path / "table.npy"),
        str(tmp_path / "out.npy"),
        env=python_env(CONSTMEM_CPU_ISA=isa),
    )
    with tf.device("/CPU:0"):
        here = cm.frobulate(data, tf.constant(table)).numpy()
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), here)
    np.testing.assert_array_equal(here, frobulate_reference(data, table))


def test_a_second_copy_of_the_library_leaves_the_first_in_charge(tmp_path):
    # As with a pip install plus a local build: the same library loaded again from another path.
    import shutil

    copy = tmp_path / "_constmem_ops_copy.so"
    shutil.copy(cm.library_path(), copy)
    code = (
        "import sys, numpy as np, tensorflow as tf, constmem.tensorflow as cm\n"
        "tf.load_op_library(sys.argv[1])\n"
        "for device in ['/CPU:0'] + [d.name for d in tf.config.list_logical_devices('GPU')]:\n"
        "    with tf.device(device):\n"
        "        for source in ('input', 'host', 'attr'):\n"
        "            t = [3, 4] if source == 'attr' else tf.constant([3, 4])\n"
        "            x = np.array([1.5, -2.0], np.float32)\n"
        "            out = cm.frobulate(x, t, source=source)\n"
        "            assert out.numpy().tolist() == [8.5, 5.0], (device, source, out)\n"
        "if cm.build_info().get('xla_lowering'):  # XLA's registrations are the first's too\n"
        "    f = tf.function(lambda v: cm.polyval([2.0, 1.0], v), jit_compile=True)\n"
        "    assert f(tf.constant([1.0, 3.0])).numpy().tolist() == [3.0, 7.0]\n"
        "print('second copy: ok')\n"
    )
    result = run_python("-c", code, str(copy), env=python_env(TF_CPP_MIN_LOG_LEVEL="0"))
    assert "second copy: ok" in result.stdout
    assert "already registered by another copy" in result.stderr
    if cm.build_info().get("xla_lowering"):
        assert "this copy adds none" in result.stderr


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("table", [[0], [1, -1], [2**31 - 1, 5]], ids=["zero", "cancel", "large"])
def test_special_values_follow_the_numerics_contract(device, source, dtype, table):
    # The contract (docs/numerics.md): every value but NaN is bitwise the same on every device;
    # NaN stays NaN (its payload and sign kept on the CPU); subnormal data kept, also on
    # TensorFlow's CPU threads, which flush denormals for TensorFlow's own ops.
    data = np.tile(special_values(dtype), 300)  # past one vector tile, so every path sees them
    table = np.array(table, np.int32)
    with tf.device(device):
        out = cm.frobulate(
            data, table if source == "attr" else tf.constant(table), source=source
        ).numpy()
    on_cpu = device.startswith("/CPU")
    expected = frobulate_reference(data, table)
    nan = np.isnan(data)
    np.testing.assert_array_equal(np.isnan(out), nan)
    assert out[~nan].tobytes() == expected[~nan].tobytes()
    if on_cpu:  # x86 quiets a NaN and keeps its payload and sign
        assert out[nan].tobytes() == expected[nan].tobytes()


def test_the_table_limit_comes_from_the_op_library():
    assert cm.MAX_TABLE_SIZE == 1048576  # kFrobulateMaxTableSize in C++: kMaxTableEntries
    assert_invalid(
        lambda: cm.frobulate([1.0], np.ones(cm.MAX_TABLE_SIZE + 1, np.int32)),
        str(cm.MAX_TABLE_SIZE),
    )


def test_a_cached_attr_table_is_reused_only_for_values_of_the_same_types():
    """[1, 2] is encoded once as an attr; [1.0, 2.0] equals it but is refused."""
    x = tf.zeros([3])
    for _ in range(2):
        np.testing.assert_array_equal(cm.frobulate(x, [1, 2]).numpy(), [3, 3, 3])
    with pytest.raises(tf.errors.InvalidArgumentError, match="integers that fit int32"):
        cm.frobulate(x, [1.0, 2.0])
    np.testing.assert_array_equal(cm.frobulate(x, (1, 2)).numpy(), [3, 3, 3])
