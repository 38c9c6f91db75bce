# SPDX-License-Identifier: Apache-2.0
"""CausalConv1d, an op with two tables (weight and bias), in TensorFlow against a float64 NumPy
reference: eagerly, in tf.function and under XLA, each table in every form, with its gradients and
its errors, which name the table."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
import causal_conv1d_ops  # noqa: E402
from causal_conv1d_ops import check_placement_of, reference  # noqa: E402
from tensorflow.python.framework import kernels  # noqa: E402

DEVICES = ["/CPU:0"] + [d.name for d in tf.config.list_logical_devices("GPU")]
MODES = ["eager", "function", "xla"]
WRONG = tf.errors.InvalidArgumentError


@pytest.fixture(scope="module")
def ops():
    return causal_conv1d_ops.tensorflow()


def tf_reference(x, weight, bias):
    """The same in TensorFlow's own ops (for its gradients), in x's dtype."""
    channels, length = x.shape[-2], x.shape[-1]
    weight = tf.reshape(weight, [channels, -1])
    taps = weight.shape[1]
    padded = tf.pad(x, [[0, 0]] * (len(x.shape) - 1) + [[taps - 1, 0]])
    y = tf.broadcast_to(bias[:, None], x.shape)
    for j in range(taps):
        y = y + weight[:, j, None] * padded[..., j : j + length]
    return y


def run(mode, function, *args):
    """function(*args) eagerly, in tf.function, or compiled by XLA."""
    if mode == "eager":
        return function(*args)
    compiled = tf.function(function, jit_compile=mode == "xla")
    if mode != "xla":
        return compiled(*args)
    try:
        return compiled(*args)
    except WRONG as error:
        # A library built without tf/adapter/xla has no lowering: nothing of the op to test.
        if "No registered 'Example>CausalConv1d" in str(error):
            pytest.skip("the example library has no XLA lowering (CONSTMEM_REGISTER_TABLE_OP_XLA)")
        raise


def sample(shape=(2, 3, 37), taps=5, seed=0):
    rng = np.random.default_rng(seed)
    channels = shape[-2]
    x = rng.standard_normal(shape).astype(np.float32)
    weight = rng.standard_normal(channels * taps).astype(np.float32)
    bias = rng.standard_normal(channels).astype(np.float32)
    return x, weight, bias


def check(y, x, weight, bias):
    assert y.dtype == np.float32 and y.shape == x.shape
    np.testing.assert_allclose(y, reference(x, weight, bias), rtol=1e-5, atol=1e-5)


# Each table's form: how a caller passes it.
FORMS = {
    "tensor": tf.constant,
    "variable": tf.Variable,
    "list": lambda v: [float(e) for e in v],
    "numpy": np.asarray,
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("source", ["auto", "input", "host", "attr"])
@pytest.mark.parametrize(
    ("weight_form", "bias_form"),
    [("tensor", "tensor"), ("list", "list"), ("numpy", "numpy"), ("tensor", "list"),
     ("numpy", "variable"), ("variable", "variable")],
)  # fmt: skip
def test_matches_numpy(ops, device, mode, source, weight_form, bias_form):
    x, weight, bias = sample(seed=len(weight_form + bias_form + source))
    tables = FORMS[weight_form](weight), FORMS[bias_form](bias)
    if source == "attr" and "variable" in (weight_form, bias_form):
        # A variable's value may change after the graph is built: never an attr.
        first = "weight" if weight_form == "variable" else "bias"
        with pytest.raises(WRONG, match=f"source='attr' needs a {first} known when the graph"):
            run(mode, lambda x: ops.causal_conv1d(x, *tables, source=source), tf.constant(x))
        return
    with tf.device(device):
        y = run(mode, lambda x: ops.causal_conv1d(x, *tables, source=source), tf.constant(x))
    check(y.numpy(), x, weight, bias)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("source", ["auto", "input", "host"])
def test_tables_as_arguments_of_the_graph(ops, device, mode, source):
    x, weight, bias = sample((4, 2, 3, 300), taps=9, seed=1)
    with tf.device(device):
        y = run(
            mode,
            lambda x, w, b: ops.causal_conv1d(x, w, b, source=source),
            tf.constant(x),
            tf.constant(weight),
            tf.constant(bias),
        )
    check(y.numpy(), x, weight, bias)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("source", ["input", "host", "attr"])
def test_xla_computes_the_bits_of_the_kernels(ops, device, source):
    x, weight, bias = sample((3, 5, 64), taps=7, seed=2)
    with tf.device(device):
        eager = ops.causal_conv1d(x, weight, bias, source=source).numpy()
        compiled = run(
            "xla", lambda x: ops.causal_conv1d(x, weight, bias, source=source), tf.constant(x)
        )
    np.testing.assert_array_equal(compiled.numpy(), eager)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    ("channels", "taps", "length"),
    [
        (1, 1, 1),
        (1, 1, 1000),
        (256, 4, 10),
        (257, 4, 10),
        (1024, 4, 3),
        (1025, 4, 3),
        (3, 2000, 50),
    ],
)  # by value, a slot of the constant bank and global memory, for each table
def test_every_placement_matches_numpy(ops, device, channels, taps, length):
    x, weight, bias = sample((2, channels, length), taps=taps, seed=channels + taps)
    for source in ("input", "host", "attr"):
        with tf.device(device):
            y = ops.causal_conv1d(x, weight, bias, source=source).numpy()
        check(y, x, weight, bias)


def node_types(function, *args):
    graph = tf.function(function).get_concrete_function(*args).graph
    return [op.type for op in graph.get_operations() if op.type.startswith("Example>")]


def test_each_form_takes_every_table(ops):
    x, weight, bias = sample()
    x = tf.constant(x)

    def types(w, b, **kw):
        return node_types(lambda x: ops.causal_conv1d(x, w, b, **kw), x)

    # All static: every table an attr (with its exact values); a tensor among them: every table an
    # input, the static ones constants; "host": every table an input in host memory.
    assert types(list(weight), bias) == ["Example>CausalConv1dAttr"]
    assert types(tf.constant(weight), list(bias)) == ["Example>CausalConv1d"]
    assert types(weight, tf.constant(bias)) == ["Example>CausalConv1d"]
    assert types(weight, bias, source="host") == ["Example>CausalConv1dHostTable"]
    assert types(tf.constant(weight), tf.constant(bias), source="attr") == [
        "Example>CausalConv1dAttr"
    ]
    graph = (
        tf.function(lambda x: ops.causal_conv1d(x, list(weight), list(bias)))
        .get_concrete_function(x)
        .graph
    )
    (node,) = [op for op in graph.get_operations() if op.type == "Example>CausalConv1dAttr"]
    bits = [np.asarray(node.get_attr(n), np.int64).astype(np.uint32) for n in ("weight", "bias")]
    np.testing.assert_array_equal(bits[0].view(np.float32), weight)
    np.testing.assert_array_equal(bits[1].view(np.float32), bias)
    graph = (
        tf.function(lambda x: ops.causal_conv1d(x, tf.constant(weight), bias, source="host"))
        .get_concrete_function(x)
        .graph
    )
    (node,) = [op for op in graph.get_operations() if op.type.startswith("Example>")]
    assert [t.op.type for t in node.inputs[1:]] == ["Const", "Const"]


def test_python_tables_are_encoded_once(ops):
    from constmem.tensorflow import _tables

    x, weight, bias = sample()
    _tables._ENCODED_TABLES.clear()
    first = ops.causal_conv1d(x, weight.tolist(), bias.tolist()).numpy()
    assert [k[0] for k in _tables._ENCODED_TABLES] == ["causal_conv1d"]
    again = ops.causal_conv1d(x, weight.tolist(), bias.tolist()).numpy()
    np.testing.assert_array_equal(first, again)
    # Another bias is another key; the weight's values alone do not find it.
    other = ops.causal_conv1d(x, weight.tolist(), (bias + 1).tolist()).numpy()
    np.testing.assert_allclose(other, first + 1, rtol=1e-5, atol=1e-5)
    assert len(_tables._ENCODED_TABLES) == 2


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("source", ["auto", "host"])
@pytest.mark.parametrize("variables", [False, True])
def test_gradients_match_the_definition(ops, device, mode, source, variables):
    x, weight, bias = sample((2, 3, 11), taps=4, seed=5)
    upstream = np.random.default_rng(6).standard_normal(x.shape).astype(np.float32)
    make = tf.Variable if variables else tf.constant
    x64, w64, b64 = (tf.constant(v.astype(np.float64)) for v in (x, weight, bias))
    with tf.GradientTape() as tape:
        tape.watch([x64, w64, b64])
        loss = tf.reduce_sum(tf_reference(x64, w64, b64) * upstream.astype(np.float64))
    expected = [g.numpy() for g in tape.gradient(loss, [x64, w64, b64])]

    def gradients(x, w, b):
        with tf.GradientTape() as tape:
            tape.watch([x, w, b])
            loss = tf.reduce_sum(ops.causal_conv1d(x, w, b, source=source) * upstream)
        return tape.gradient(loss, [x, w, b])

    with tf.device(device):
        args = tf.constant(x), make(weight), make(bias)
        if variables:
            got = run(mode, lambda x: gradients(x, *args[1:]), args[0])
        else:
            got = run(mode, gradients, *args)
    for g, e, name in zip(got, expected, ("x", "weight", "bias"), strict=True):
        assert g is not None, name
        np.testing.assert_allclose(g.numpy(), e, rtol=1e-4, atol=1e-4, err_msg=name)


@pytest.mark.parametrize("mode", MODES)
def test_static_tables_give_the_data_its_gradient(ops, mode):
    x, weight, bias = sample((3, 2, 9), taps=3, seed=7)
    x64 = tf.constant(x.astype(np.float64))
    with tf.GradientTape() as tape:
        tape.watch(x64)
        loss = tf.reduce_sum(tf_reference(x64, weight.astype(np.float64), bias.astype(np.float64)))
    expected = tape.gradient(loss, x64).numpy()

    def gradient(x, tables):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(ops.causal_conv1d(x, *tables))
        return tape.gradient(loss, x)

    for tables in ((weight.tolist(), bias), (tf.constant(weight), bias.tolist())):
        got = run(mode, lambda x, tables=tables: gradient(x, tables), tf.constant(x))
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=1e-5)


def test_second_order_gradient_to_the_weight(ops):
    x, weight, bias = sample((1, 2, 6), taps=2, seed=8)
    x, w, b = tf.constant(x), tf.constant(weight), tf.constant(bias)
    with tf.GradientTape() as outer:
        outer.watch(w)
        with tf.GradientTape() as inner:
            inner.watch(x)
            loss = tf.reduce_sum(ops.causal_conv1d(x, w, b) ** 2)
        grad_x = inner.gradient(loss, x)
        norm = tf.reduce_sum(grad_x**2)
    got = outer.gradient(norm, w)
    x64, w64, b64 = (tf.constant(v.numpy().astype(np.float64)) for v in (x, w, b))
    with tf.GradientTape() as outer:
        outer.watch(w64)
        with tf.GradientTape() as inner:
            inner.watch(x64)
            loss = tf.reduce_sum(tf_reference(x64, w64, b64) ** 2)
        norm = tf.reduce_sum(inner.gradient(loss, x64) ** 2)
    np.testing.assert_allclose(got.numpy(), outer.gradient(norm, w64).numpy(), rtol=1e-4)


BAD_TABLES = [
    # (weight, bias, message): each table checked under its own name, in each of its forms.
    (np.ones(7, np.float32), np.ones(3, np.float32),
     "weight must have the same number of taps for each of the 3 channels; got 7 entries"),
    (np.ones(6, np.float32), np.ones(2, np.float32),
     r"bias must have one entry per channel \(3\); got 2"),
    (np.ones(2**20 + 1, np.float32), np.ones(3, np.float32),
     "weight must have 1 to 1048576 entries; got 1048577"),
    (np.ones(6, np.float32), np.ones(65537, np.float32),
     "bias must have 1 to 65536 entries; got 65537"),
    (np.ones(6, np.float32), np.ones(0, np.float32), "bias must have 1 to 65536 entries; got 0"),
    (np.ones(0, np.float32), np.ones(3, np.float32),
     "weight must have 1 to 1048576 entries; got 0"),
]  # fmt: skip


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("form", ["tensor", "list", "numpy"])
@pytest.mark.parametrize("source", ["auto", "host"])
@pytest.mark.parametrize(("weight", "bias", "message"), BAD_TABLES)
def test_bad_tables_are_invalid_argument_naming_the_table(
    ops, device, form, source, weight, bias, message
):
    x = np.ones((2, 3, 8), np.float32)
    with tf.device(device), pytest.raises(WRONG, match=message):
        ops.causal_conv1d(x, FORMS[form](weight), FORMS[form](bias), source=source)
    with tf.device(device):  # and the next call is right
        check(ops.causal_conv1d(x, np.ones(6), np.ones(3)).numpy(), x, np.ones(6), np.ones(3))


@pytest.mark.parametrize(
    ("weight", "bias", "message"),
    [
        (tf.ones(6, tf.float64), np.ones(3), "weight must be float32; got float64"),
        (np.ones(6), tf.ones(3, tf.int32), "bias must be float32; got int32"),
        (np.ones(6), tf.ones([1, 3]), r"bias must be a vector \(rank 1\); got shape \[1,3\]"),
        (np.ones((2, 3)), np.ones(3), r"weight must be a vector \(rank 1\); got shape \(2, 3\)"),
        (np.ones(6), ["a", 1.0, 2.0], "bias must be real numbers; got 'a'"),
        ([1.0] * 5 + [True], np.ones(3), "weight must be real numbers; got True"),
    ],
)
def test_bad_table_types_name_the_table(ops, weight, bias, message):
    with pytest.raises(WRONG, match=message):
        ops.causal_conv1d(np.ones((2, 3, 8), np.float32), weight, bias)


def test_bad_data_and_forms(ops):
    weight, bias = np.ones(6, np.float32), np.ones(3, np.float32)
    with pytest.raises(WRONG, match="x must be float32; got float64"):
        ops.causal_conv1d(np.ones((3, 8)), weight, bias)
    with pytest.raises(WRONG, match=r"x must have rank 2 or more \(\[..., C, L\]\); got rank 1"):
        ops.causal_conv1d(np.ones(8, np.float32), weight, bias)
    with pytest.raises(ValueError, match="source must be one of"):
        ops.causal_conv1d(np.ones((3, 8), np.float32), weight, bias, source="device")

    @tf.function
    def attr_of_a_graph_tensor(x, b):
        return ops.causal_conv1d(x, weight, b, source="attr")

    with pytest.raises(WRONG, match="source='attr' needs a bias known when the graph is built"):
        attr_of_a_graph_tensor(tf.ones((3, 8)), tf.constant(bias))


def test_sizes_known_only_when_the_graph_runs_are_checked_then(ops):
    # Shapes unknown while tracing: the kernel's checks name the table.
    signature = [tf.TensorSpec([None, None]), tf.TensorSpec([None]), tf.TensorSpec([None])]
    call = tf.function(lambda x, w, b: ops.causal_conv1d(x, w, b), input_signature=signature)
    with pytest.raises(WRONG, match=r"bias must have one entry per channel \(3\); got 2"):
        call(tf.ones((3, 8)), tf.ones(6), tf.ones(2))
    with pytest.raises(WRONG, match="weight must have 1 to 1048576 entries; got 0"):
        call(tf.ones((3, 8)), tf.ones(0), tf.ones(3))
    check(call(tf.ones((3, 8)), tf.ones(6), tf.ones(3)).numpy(), np.ones((3, 8)), np.ones(6),
          np.ones(3))  # fmt: skip


def has_gpu_kernels():
    found = kernels.get_registered_kernels_for_op("Example>CausalConv1d").kernel
    return any(k.device_type == "GPU" for k in found)


def test_placement_of_each_table(ops):
    check_placement_of(ops, has_gpu_kernels())


def test_placement_of_refuses_an_unknown_table(ops):
    with pytest.raises(ValueError, match="table must be one of weight, bias; got 'gains'"):
        ops.placement_of("causal_conv1d", 3, table="gains")


def test_a_saved_model_reloads_with_variable_and_attr_tables(ops, tmp_path):
    """Both tables as Variables (inputs of the graph) in one call and as lists (attrs) in another:
    the saved graph reloads and gives the same bits."""

    class Model(tf.Module):
        def __init__(self):
            super().__init__()
            self.weight = tf.Variable(np.linspace(-1, 1, 6).astype(np.float32))
            self.bias = tf.Variable(np.asarray([0.5, -0.5], np.float32))

        @tf.function(input_signature=[tf.TensorSpec([None, 2, 7], tf.float32)])
        def __call__(self, x):
            learned = ops.causal_conv1d(x, self.weight, self.bias)
            return learned + ops.causal_conv1d(x, [1.0, 2.0, 3.0, 4.0], [0.0, 1.0])

    model = Model()
    x = np.random.default_rng(21).standard_normal((3, 2, 7)).astype(np.float32)
    expected = reference(x, model.weight.numpy(), model.bias.numpy()) + reference(
        x, [1.0, 2.0, 3.0, 4.0], [0.0, 1.0]
    )
    np.testing.assert_allclose(model(x).numpy(), expected, atol=2e-6)
    tf.saved_model.save(model, str(tmp_path))
    reloaded = tf.saved_model.load(str(tmp_path))
    np.testing.assert_array_equal(reloaded(x).numpy(), model(x).numpy())
