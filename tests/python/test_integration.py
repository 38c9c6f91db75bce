"""The ops where models run besides eager Python: TF1 graphs and Session.run, tf.data pipelines,
and XLA (which cannot compile them: the error must say so clearly)."""

import constmem
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
        y = constmem.frobulate(x, table if source == "attr" else t, source=source)
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
            lambda: constmem.frobulate(x, table, source="input"),
            lambda: constmem.frobulate(x, table, source="host"),
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


@pytest.mark.parametrize("source", SOURCES)
def test_xla_says_clearly_that_it_cannot_compile_the_op(source):
    table = [1, 2] if source == "attr" else tf.constant([1, 2])

    @tf.function(jit_compile=True)
    def run(x):
        return constmem.frobulate(x, table, source=source)

    with pytest.raises(tf.errors.InvalidArgumentError, match="Constmem>Frobulate"):
        run(tf.constant([1.0, 2.0]))
    # Outside XLA the same function body works, and the process carries on.
    np.testing.assert_array_equal(
        tf.function(lambda x: constmem.frobulate(x, table, source=source))(tf.constant([1.0])),
        [4.0],
    )
