# SPDX-License-Identifier: Apache-2.0
"""CausalConv1d (two tables, weight and bias) in JAX: against NumPy in float64 on the CPU and every
GPU, each table in every form (jax.Array, list, NumPy) and mixed, eagerly and under jax.jit, vmap,
gradients to x, weight and bias, bad input naming the table as a ValueError while tracing, the
FFI handlers' own checks, and placement_of per table."""

import ctypes
import re

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from causal_conv1d_ops import BUILD, check_placement_of, random_case, reference  # noqa: E402
from causal_conv1d_ops import jax as causal_conv1d  # noqa: E402
from example_libraries import run_on_cpu_devices  # noqa: E402

PATH = f"{BUILD}/_causal_conv1d_jax.so"
DEVICES = jax.devices("cpu") + [d for d in jax.devices() if d.platform == "gpu"]
FORMS = ("array", "list", "numpy")


@pytest.fixture(scope="module")
def ops():
    return causal_conv1d()


def jnp_reference(x, weight, bias):
    """The same convolution in jax.numpy, which JAX differentiates on its own."""
    channels, length = x.shape[-2:]
    w = weight.reshape(channels, -1)
    taps = w.shape[1]
    padded = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(taps - 1, 0)])
    y = jnp.broadcast_to(bias[:, None], x.shape)
    for j in range(taps):
        y = y + w[:, j, None] * padded[..., j : j + length]
    return y


def form_of(values, form, device):
    """`values` (float32) as one table form, a jax.Array on `device`."""
    array = np.asarray(values, np.float32)
    if form == "array":
        return jax.device_put(array, device)
    if form == "list":
        return array.tolist()
    return array.copy()


def with_forms(ops, weight, bias):
    """`fn(x, *arrays)` for jax.jit: the jax.Array tables are its arguments, the others closed
    over."""
    is_array = [isinstance(t, jax.Array) for t in (weight, bias)]

    def fn(x, *arrays):
        rest = iter(arrays)
        w, b = (next(rest) if a else t for a, t in zip(is_array, (weight, bias), strict=True))
        return ops.causal_conv1d(x, w, b)

    return fn, [t for a, t in zip(is_array, (weight, bias), strict=True) if a]


# (x's shape [..., C, L], taps per channel): weights from 1 to 4,200 entries and biases from 1 to
# 1,100 (past each table's by-value and constant-bank sizes on a GPU), taps longer than the row.
CASES = [
    ((1, 1), 1),
    ((3, 10), 4),
    ((2, 4, 33), 5),
    ((2, 3, 5), 9),
    ((2, 16, 100), 64),
    ((1, 4, 300), 1050),
    ((300, 2), 3),
    ((1, 1100, 8), 2),
]


@pytest.mark.parametrize("device", DEVICES, ids=str)
@pytest.mark.parametrize(("shape", "taps"), CASES)
def test_every_table_form_matches_numpy_eagerly_and_under_jit(ops, device, shape, taps):
    x, weight, bias = random_case(shape, taps, seed=sum(shape) + taps)
    expected = reference(x, weight, bias)
    data = jax.device_put(x, device)
    results = {}
    for weight_form in FORMS:
        for bias_form in FORMS:
            w, b = form_of(weight, weight_form, device), form_of(bias, bias_form, device)
            eager = np.asarray(ops.causal_conv1d(data, w, b))
            fn, arrays = with_forms(ops, w, b)
            jitted = np.asarray(jax.jit(fn)(data, *arrays))
            assert eager.dtype == np.float32 and eager.shape == x.shape
            np.testing.assert_allclose(eager, expected, rtol=1e-5, atol=1e-5)
            results[(weight_form, bias_form, "eager")] = eager
            results[(weight_form, bias_form, "jit")] = jitted
    # The same fused multiply-adds in the same order whatever the tables' forms.
    first = results[("array", "array", "eager")]
    for form, result in results.items():
        np.testing.assert_array_equal(result, first, err_msg=str(form))


def test_jit_takes_both_tables_as_arguments(ops):
    x, weight, bias = random_case((2, 3, 20), 4, seed=1)
    fn = jax.jit(ops.causal_conv1d)
    out = fn(jnp.asarray(x), jnp.asarray(weight), jnp.asarray(bias))
    np.testing.assert_allclose(np.asarray(out), reference(x, weight, bias), rtol=1e-5, atol=1e-5)
    # New values of the same shapes reuse the compiled function's arguments.
    out = fn(jnp.asarray(x), jnp.asarray(-weight), jnp.asarray(2 * bias))
    expected = reference(x, -weight, 2 * bias)
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-5, atol=1e-5)


def test_vmap_over_data_and_over_a_table(ops):
    x, weight, bias = random_case((4, 3, 12), 5, seed=2)
    batched = jax.vmap(lambda a: ops.causal_conv1d(a, jnp.asarray(weight), bias.tolist()))(x)
    np.testing.assert_allclose(np.asarray(batched), reference(x, weight, bias), rtol=1e-5)
    weights = np.stack([weight, -weight, 2 * weight])  # a weight per batch element
    one = jnp.asarray(x[0])
    per_weight = jax.vmap(lambda w: ops.causal_conv1d(one, w, jnp.asarray(bias)))(weights)
    for i, w in enumerate(weights):
        np.testing.assert_allclose(
            np.asarray(per_weight[i]), reference(x[0], w, bias), rtol=1e-5, atol=1e-5
        )


@pytest.mark.parametrize("device", DEVICES, ids=str)
@pytest.mark.parametrize(("shape", "taps"), [((3, 10), 4), ((2, 4, 33), 5), ((1, 2, 3), 6)])
def test_gradients_to_x_weight_and_bias_match_jax_numpy(ops, device, shape, taps):
    x, weight, bias = random_case(shape, taps, seed=3)
    grad = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
    data, w, b = (jax.device_put(v, device) for v in (x, weight, bias))
    np.testing.assert_allclose(
        np.asarray(jnp_reference(data, w, b)), reference(x, weight, bias), rtol=1e-5, atol=1e-5
    )

    def loss(op):
        return lambda a, ww, bb: (op(a, ww, bb) * grad).sum()

    expected = jax.grad(loss(jnp_reference), (0, 1, 2))(data, w, b)
    differentiated = jax.grad(loss(ops.causal_conv1d), (0, 1, 2))
    for fn in (differentiated, jax.jit(differentiated)):
        got = fn(data, w, b)
        for name, g, e in zip(("x", "weight", "bias"), got, expected, strict=True):
            assert g.shape == e.shape, name
            np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-4, atol=1e-5)
    # A static table has no gradient; the others still get theirs.
    ex, ew, eb = expected
    gx, gb = jax.grad(
        lambda a, bb: (ops.causal_conv1d(a, weight.tolist(), bb) * grad).sum(), (0, 1)
    )(data, b)
    np.testing.assert_allclose(np.asarray(gx), np.asarray(ex), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(gb), np.asarray(eb), rtol=1e-4, atol=1e-5)
    gx, gw = jax.grad(lambda a, ww: (ops.causal_conv1d(a, ww, bias) * grad).sum(), (0, 1))(data, w)
    np.testing.assert_allclose(np.asarray(gx), np.asarray(ex), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(gw), np.asarray(ew), rtol=1e-4, atol=1e-5)
    gx = jax.grad(lambda a: (ops.causal_conv1d(a, weight, bias.tolist()) * grad).sum())(data)
    np.testing.assert_allclose(np.asarray(gx), np.asarray(ex), rtol=1e-4, atol=1e-5)


def test_gradients_match_finite_differences(ops):
    x, weight, bias = random_case((2, 5), 3, seed=6)
    grad = np.random.default_rng(7).standard_normal(x.shape)
    gx, gw, gb = jax.grad(
        lambda a, w, b: (ops.causal_conv1d(a, w, b) * grad.astype(np.float32)).sum(), (0, 1, 2)
    )(jnp.asarray(x), jnp.asarray(weight), jnp.asarray(bias))
    step = 1e-3
    for which, got in enumerate((gx, gw, gb)):
        values = [x.astype(np.float64), weight.astype(np.float64), bias.astype(np.float64)]
        numeric = np.zeros(values[which].shape)
        for i in np.ndindex(values[which].shape):
            up = [v.copy() for v in values]
            down = [v.copy() for v in values]
            up[which][i] += step
            down[which][i] -= step
            numeric[i] = ((reference(*up) - reference(*down)) * grad).sum() / (2 * step)
        np.testing.assert_allclose(np.asarray(got), numeric, rtol=1e-3, atol=1e-4)


def test_eager_calls_keep_one_compiled_call_per_static_tables(ops):
    import constmem.jax as cj

    x, weight, bias = random_case((2, 3, 7), 2, seed=8)
    data = jnp.asarray(x)
    kept = len(cj._static_calls)
    ops.causal_conv1d(data, weight.tolist(), (bias + 0.5).tolist())
    assert len(cj._static_calls) == kept + 1
    ops.causal_conv1d(data, list(weight.tolist()), (bias + 0.5).tolist())  # equal values
    ops.causal_conv1d(data, weight, bias + 0.5)  # the same values from NumPy
    assert len(cj._static_calls) == kept + 1
    # A jax.Array weight is an argument of the compiled call: its values are no part of the key.
    mixed = ops.causal_conv1d(data, jnp.asarray(weight), (bias + 0.25).tolist())
    ops.causal_conv1d(data, jnp.asarray(-weight), (bias + 0.25).tolist())
    assert len(cj._static_calls) == kept + 2
    expected = reference(x, weight, bias + 0.25)
    np.testing.assert_allclose(np.asarray(mixed), expected, rtol=1e-5, atol=1e-5)


def _bad_calls():
    x = np.ones((2, 3, 10), np.float32)
    w, b = np.ones(12, np.float32), np.ones(3, np.float32)
    return [
        (x, w, jnp.ones(4), "bias must have one entry per channel (3); got 4"),
        (x, w, [1.0] * 4, "bias must have one entry per channel (3); got 4"),
        (
            x,
            jnp.ones(7),
            b,
            "weight must have the same number of taps for each of the 3 channels; got 7 entries",
        ),
        (
            x,
            [0.5] * 13,
            jnp.ones(3),
            "weight must have the same number of taps for each of the 3 channels; got 13 entries",
        ),
        (x, jnp.ones(12, jnp.int32), b, "weight must be float32; got int32"),
        (x, w, jnp.ones(3, jnp.int32), "bias must be float32; got int32"),
        (x, jnp.ones((3, 4)), b, "weight must be a vector (rank 1); got shape (3, 4)"),
        (x, w, np.ones((3, 1)), "bias must be a vector (rank 1); got shape (3, 1)"),
        (x, w, jnp.ones((3, 1)), "bias must be a vector (rank 1); got shape (3, 1)"),
        (x, w, [], "bias must have 1 to 65536 entries; got 0"),
        (x, [], b, "weight must have 1 to 1048576 entries; got 0"),
        (x, w, [1.0, "a", 2.0], "bias must be real numbers; got 'a'"),
        (x, [True] * 12, b, "weight must be real numbers; got True"),
        (
            np.ones(10, np.float32),
            [1.0],
            [1.0],
            "x must have rank 2 or more ([..., C, L]); got rank 1",
        ),
        (x.astype(np.int32), w, b, "x must be float32; got int32"),
    ]


@pytest.mark.parametrize(
    ("x", "weight", "bias", "message"), _bad_calls(), ids=[m for *_, m in _bad_calls()]
)
def test_bad_input_is_a_value_error_naming_the_table_while_tracing(ops, x, weight, bias, message):
    with pytest.raises(ValueError) as raised:
        ops.causal_conv1d(jnp.asarray(x), weight, bias)
    assert str(raised.value) == message
    fn, arrays = with_forms(ops, weight, bias)
    with pytest.raises(ValueError) as raised:
        jax.jit(fn).lower(jnp.asarray(x), *arrays)  # traced, never run
    # Under jit JAX adds a line on its traceback filtering below the message.
    assert str(raised.value).partition("\n")[0] == message
    # The next call is right.
    good = ops.causal_conv1d(jnp.ones((1, 2, 3)), [1.0, 2.0], jnp.asarray([0.5, -1.5]))
    np.testing.assert_array_equal(np.asarray(good), np.broadcast_to([[1.5], [0.5]], (1, 2, 3)))


@pytest.mark.parametrize(
    ("target", "tables", "attributes", "message"),
    [
        (
            "example_causal_conv1d",
            (np.ones(6, np.int32), np.ones(3, np.float32)),
            {},
            "weight must be float32; got int32",
        ),
        (
            "example_causal_conv1d",
            (np.ones(6, np.float32), np.ones(3, np.int32)),
            {},
            "bias must be float32; got int32",
        ),
        (
            "example_causal_conv1d",
            (np.ones(6, np.float32), np.ones(2, np.float32)),
            {},
            "bias must have one entry per channel (3); got 2",
        ),
        (
            "example_causal_conv1d_static",
            (),
            {"weight": np.ones(6)},
            "causal_conv1d needs the attribute bias",
        ),
        (
            "example_causal_conv1d_static",
            (),
            {"weight": np.ones(6), "bias": np.ones(0)},
            "bias must have 1 to 65536 entries; got 0",
        ),
    ],
)
def test_the_handlers_check_each_table_under_its_name(ops, target, tables, attributes, message):
    # Past the wrapper's checks: the FFI handlers' own, and the next call right.
    x = jnp.ones((3, 8), jnp.float32)
    call = jax.ffi.ffi_call(target, jax.ShapeDtypeStruct(x.shape, x.dtype))
    with pytest.raises(Exception, match=re.escape(message)):
        np.asarray(call(x, *(jnp.asarray(t) for t in tables), **attributes))
    # The handlers themselves, with every table right: the array form's operands in order, the
    # static form's attributes by table name.
    weight, bias = np.arange(6, dtype=np.float32), np.array([1, 2, 3], np.float32)
    array = jax.ffi.ffi_call("example_causal_conv1d", jax.ShapeDtypeStruct(x.shape, x.dtype))
    static = jax.ffi.ffi_call(
        "example_causal_conv1d_static", jax.ShapeDtypeStruct(x.shape, x.dtype)
    )
    expected = reference(np.ones((3, 8)), weight, bias)
    np.testing.assert_array_equal(np.asarray(array(x, weight, bias)), expected)
    static_out = static(x, weight=weight.astype(np.float64), bias=bias.astype(np.float64))
    np.testing.assert_array_equal(np.asarray(static_out), expected)


def _has_gpu_kernels():
    """Whether the library registers CUDA handlers (it was built with GPU kernels)."""
    find = ctypes.CDLL(PATH).constmem_ffi_handler
    find.restype = ctypes.c_void_p
    find.argtypes = (ctypes.c_char_p, ctypes.c_char_p)
    return bool(find(b"example_causal_conv1d", b"CUDA"))


def test_placement_of_answers_for_each_table(ops):
    """Where a launch would put each table, by its own rule, asked with no GPU: None for a library
    built without GPU kernels."""
    check_placement_of(ops, _has_gpu_kernels())


# On 4 simulated CPU devices (set before JAX starts: a process of its own), x [rows, channels,
# samples] split along each axis in turn against the call on one device: the weight and bias
# split with the channels (their blocks), the samples widened by the k - 1 before each shard.
SHARDED = """
import re, jax, numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P
from causal_conv1d_ops import jax as causal_conv1d, random_case
ops = causal_conv1d()
x, weight, bias = (np.asarray(a, np.float32) for a in random_case((4, 8, 256), 3, 0))
mesh = jax.make_mesh((4,), ("a",), axis_types=(jax.sharding.AxisType.Auto,))
fn = jax.jit(lambda x, w, b: ops.causal_conv1d(x, w, b))
want = np.asarray(fn(x, weight, bias))
halo = {"collective-permute"}
for spec, allowed in ((P("a"), set()), (P(None, "a"), set()), (P(None, None, "a"), halo)):
    args = (jax.device_put(x, NamedSharding(mesh, spec)), weight, bias)
    got = fn(*args)
    assert np.array_equal(np.asarray(got), want), spec
    assert got.sharding.is_equivalent_to(args[0].sharding, 3), (spec, got.sharding)
    text = fn.lower(*args).compile().as_text()
    kinds = r"(all-gather|collective-permute|all-reduce|all-to-all)(?:-start)?\\("
    found = set(re.findall(kinds, text))
    assert found == allowed, (spec, found)
print("sharded: PASS")
"""


def test_a_sharded_call_runs_shard_by_shard_bit_for_bit():
    result = run_on_cpu_devices(SHARDED)
    assert result.returncode == 0 and "sharded: PASS" in result.stdout, result.stderr[-3000:]
