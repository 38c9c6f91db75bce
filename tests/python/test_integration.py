"""The ops where models run besides eager Python: TF1 graphs and Session.run, tf.data pipelines,
and XLA (tf.function(jit_compile=True)), whose results must equal the uncompiled ones bitwise."""

import functools

import constmem.tensorflow as cm
import numpy as np
import pytest
import tensorflow as tf
from reference import frobulate_reference, random_case

SOURCES = ["input", "host", "attr"]


@pytest.mark.parametrize("source", SOURCES)
def test_graph_mode_session_run_with_placeholders(device, source):
    rng = np.random.default_rng(31)
    data, table = random_case(rng, (5, 7), np.float64, 300)
    graph = tf.Graph()
    with graph.as_default(), tf.device(device):
        x = tf.compat.v1.placeholder(tf.float64, [None, 7])
        t = tf.compat.v1.placeholder(tf.int32, [None])
        y = cm.frobulate(x, table if source == "attr" else t, source=source)
        (dx,) = tf.compat.v1.gradients(tf.reduce_sum(y * 3.0), [x])
    with tf.compat.v1.Session(graph=graph) as session:
        for rows in (5, 2):  # the same graph with another batch size and table
            used = table if source == "attr" else table[: 50 * rows]
            out, grad = session.run([y, dx], {x: data[:rows], t: used})
            np.testing.assert_array_equal(out, frobulate_reference(data[:rows], used))
            np.testing.assert_array_equal(grad, np.full((rows, 7), 3.0))


def test_tf_data_map_with_many_tables():
    rng = np.random.default_rng(32)
    tables = [rng.integers(-1000, 1000, size=n, dtype=np.int32) for n in (1, 7, 100, 1025, 5000)]
    ragged = tf.ragged.constant(tables, dtype=tf.int32)
    data = rng.standard_normal((40, 33)).astype(np.float32)

    def apply(i, x):
        table = ragged[i % len(tables)]
        out = tf.cond(
            i % 2 == 0,
            lambda: cm.frobulate(x, table, source="input"),
            lambda: cm.frobulate(x, table, source="host"),
        )
        return i, out

    dataset = tf.data.Dataset.from_tensor_slices((tf.range(40), data)).map(
        apply, num_parallel_calls=tf.data.AUTOTUNE, deterministic=False
    )
    seen = 0
    for i, out in dataset:
        i = int(i)
        np.testing.assert_array_equal(out.numpy(), frobulate_reference(data[i], tables[i % 5]))
        seen += 1
    assert seen == 40


XLA = cm.build_info().get("xla_lowering", False)
needs_xla = pytest.mark.skipif(not XLA, reason="op library built without the XLA lowering")


def xla_cases(rng, dtype):
    """Each op as a function of (source, table, x), and a table for it."""

    def table_arg(source, table, table_dtype):
        return table if source == "attr" else tf.constant(table, table_dtype)

    return {
        "frobulate": (
            lambda s, t, x: cm.frobulate(x, table_arg(s, t, tf.int32), source=s),
            rng.integers(-1000, 1000, size=300, dtype=np.int32),
        ),
        "polyval": (
            lambda s, t, x: cm.polyval(table_arg(s, t, dtype), x, source=s),
            rng.standard_normal(17).astype(dtype),
        ),
        "fir_same": (
            lambda s, t, x: cm.fir_filter(x, table_arg(s, t, dtype), padding="SAME", source=s),
            rng.standard_normal(63).astype(dtype),
        ),
        "fir_valid": (
            lambda s, t, x: cm.fir_filter(x, table_arg(s, t, dtype), padding="VALID", source=s),
            rng.standard_normal(20).astype(dtype),
        ),
    }


@needs_xla
@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_xla_compiles_every_op_to_the_same_bits(device, source, dtype):
    rng = np.random.default_rng(33)
    x = tf.constant(rng.standard_normal((3, 257)).astype(dtype))
    for name, (op, table) in xla_cases(rng, dtype).items():
        with tf.device(device):
            expected = op(source, table, x).numpy()
            compiled = tf.function(
                tf.autograph.experimental.do_not_convert(functools.partial(op, source, table)),
                jit_compile=True,
            )
            got = compiled(x).numpy()
            hlo = compiled.experimental_get_compiler_ir(x)(stage="hlo")
        assert 'custom_call_target="constmem_' in hlo, name
        assert got.shape == expected.shape and got.tobytes() == expected.tobytes(), name


@needs_xla
def test_xla_gradients_equal_the_uncompiled_ones(device):
    rng = np.random.default_rng(34)
    x = tf.constant(rng.standard_normal((4, 50)))
    coeffs = tf.constant(rng.standard_normal(5))
    taps = tf.constant(rng.standard_normal(7))

    def loss(x, coeffs, taps):
        y = cm.fir_filter(cm.polyval(coeffs, x), taps, padding="SAME")
        return tf.reduce_sum(cm.frobulate(y, [1, -2, 3]) ** 2)

    def grads(x, coeffs, taps):
        with tf.GradientTape() as tape:
            tape.watch([x, coeffs, taps])
            value = loss(x, coeffs, taps)
        return tape.gradient(value, [x, coeffs, taps])

    with tf.device(device):
        expected = [g.numpy() for g in tf.function(grads)(x, coeffs, taps)]
        got = [g.numpy() for g in tf.function(grads, jit_compile=True)(x, coeffs, taps)]
    for e, g in zip(expected, got, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-12)  # XLA may fuse the surrounding ops


@needs_xla
def test_xla_refuses_a_bad_table_with_invalid_argument():
    # A table of unknown size when traced: the check is the lowering's, when XLA compiles.
    @tf.function(
        jit_compile=True,
        input_signature=[tf.TensorSpec([None], tf.float32), tf.TensorSpec([None], tf.float32)],
    )
    def run(x, coeffs):
        return cm.polyval(coeffs, x, source="input")

    with pytest.raises(tf.errors.InvalidArgumentError, match="coeffs must have 1 to 1048576"):
        run(tf.constant([1.0]), tf.zeros([1048577]))
    np.testing.assert_array_equal(run(tf.constant([2.0]), tf.constant([1.0, 1.0])), [3.0])


@pytest.mark.skipif(XLA, reason="this op library has the XLA lowering")
def test_without_the_lowering_xla_says_clearly_that_it_cannot_compile_the_op():
    @tf.function(jit_compile=True)
    def run(x):
        return cm.frobulate(x, [1, 2])

    with pytest.raises(tf.errors.InvalidArgumentError, match="Constmem>Frobulate"):
        run(tf.constant([1.0, 2.0]))


@needs_xla
def test_xla_takes_dynamic_dimensions_and_refuses_a_dynamic_row():
    v = tf.constant(np.linspace(-1, 1, 21).astype(np.float32))

    @tf.function(jit_compile=True)
    def elementwise(v):
        kept = tf.boolean_mask(v, v > 0)  # a size XLA knows only when the program runs
        return cm.polyval([2.0, -1.0, 0.5], kept)

    expected = cm.polyval([2.0, -1.0, 0.5], tf.boolean_mask(v, v > 0)).numpy()
    got = elementwise(v).numpy()
    assert got.shape == expected.shape == (10,) and got.tobytes() == expected.tobytes()

    @tf.function(jit_compile=True)
    def filtered(v):
        return cm.fir_filter(tf.reshape(tf.boolean_mask(v, v > 0), [1, -1]), [1.0, 2.0])

    with pytest.raises(tf.errors.UnimplementedError, match="rows of static length"):
        filtered(v)
