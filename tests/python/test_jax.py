# SPDX-License-Identifier: Apache-2.0
"""The JAX ops: results against independent references, static and array tables, CPU and GPU,
jit, vmap, gradients, errors, command buffers, and the same bits as the PyTorch and TensorFlow
ops."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

import constmem.jax as cm  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.test_util import check_grads  # noqa: E402
from reference import (  # noqa: E402
    fir_fma_reference,
    frobulate_reference,
    interpolate_fma_reference,
    polyval_coefficient_gradient,
    polyval_fma_reference,
    random_case,
)

DEVICES = jax.devices("cpu") + [d for d in jax.devices() if d.platform == "gpu"]
DTYPES = [np.float32, np.float64]


@pytest.fixture(params=DEVICES, ids=str)
def device(request):
    return request.param


def jitted(fn, values, device, **kwargs):
    """fn(data, table) compiled with the table static (a sequence closed over: an attribute of
    the call) and as a jax.Array argument on `device`."""
    static = np.asarray(values).tolist()
    array = jax.device_put(values, device)
    return {
        "static": lambda d: jax.jit(lambda a: fn(a, static, **kwargs))(d),
        "array": lambda d: jax.jit(lambda a, t: fn(a, t, **kwargs))(d, array),
    }


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("table_size", [1, 100, 1025, 16384, 16385, 70000])
def test_frobulate_matches_left_to_right_sums(device, dtype, table_size):
    data, table = random_case(np.random.default_rng(table_size), (3, 129), dtype, table_size)
    expected = frobulate_reference(data, table)
    for form, call in jitted(cm.frobulate, table, device).items():
        out = call(jax.device_put(data, device))
        np.testing.assert_array_equal(np.asarray(out), expected, err_msg=form)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("degree", [0, 5, 300])
def test_polyval_matches_horner_with_one_rounding(device, dtype, degree):
    rng = np.random.default_rng(degree)
    x = rng.uniform(-1.1, 1.1, size=(2, 33)).astype(dtype)
    coeffs = rng.standard_normal(degree + 1).astype(dtype)
    expected = polyval_fma_reference(coeffs, x)
    for form, call in jitted(lambda a, c: cm.polyval(c, a), coeffs, device).items():
        out = call(jax.device_put(x, device))
        np.testing.assert_array_equal(np.asarray(out), expected, err_msg=form)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("taps", "padding"), [(1, "SAME"), (6, "SAME"), (40, "VALID")])
def test_fir_filter_matches_fma_definition(device, dtype, taps, padding):
    rng = np.random.default_rng(taps)
    x = rng.standard_normal((2, 3, 37)).astype(dtype)
    t = rng.standard_normal(taps).astype(dtype)
    expected = fir_fma_reference(x, t, padding)
    for form, call in jitted(cm.fir_filter, t, device, padding=padding).items():
        out = call(jax.device_put(x, device))
        np.testing.assert_array_equal(np.asarray(out), expected, err_msg=form)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("knots", [2, 300, 16384, 100000])
def test_interpolate_matches_its_definition(device, dtype, knots):
    rng = np.random.default_rng(knots)
    x = rng.uniform(-1.3, 2.3, size=(2, 41)).astype(dtype)
    x[0, :3] = [np.nan, np.inf, -np.inf]
    k = rng.standard_normal(knots).astype(dtype)
    expected = interpolate_fma_reference(x, k, -1.0, 2.0)
    for form, call in jitted(lambda a, t: cm.interpolate(a, t, -1.0, 2.0), k, device).items():
        out = call(jax.device_put(x, device))
        np.testing.assert_array_equal(np.asarray(out), expected, err_msg=form)


def test_vmap_over_data_and_over_tables(device):
    x = jax.device_put(np.linspace(-1, 1, 24).reshape(3, 8), device)
    tables = jax.device_put(np.arange(6, dtype=np.int32).reshape(3, 2), device)
    per_row = jax.vmap(lambda row: cm.frobulate(row, [1, 2]))(x)
    np.testing.assert_array_equal(np.asarray(per_row), np.asarray(x) + 3)
    per_table = jax.vmap(cm.frobulate)(x, tables)
    np.testing.assert_array_equal(
        np.asarray(per_table), np.asarray(x) + np.asarray(tables).sum(1)[:, None]
    )
    coeffs = jax.device_put(np.array([[1.0, 2.0], [3.0, 4.0]]), device)
    one_x = jax.device_put(np.linspace(0, 1, 5), device)
    both = jax.vmap(cm.polyval, in_axes=(0, None))(coeffs, one_x)
    np.testing.assert_array_equal(np.asarray(both[1]), np.asarray(cm.polyval([3.0, 4.0], one_x)))


def test_gradients_match_finite_differences(device):
    x = jax.device_put(np.linspace(-1, 1, 11).reshape(1, 11), device)
    coeffs = jax.device_put(np.array([0.5, -1.0, 2.0, 0.25]), device)
    taps = jax.device_put(np.array([0.25, 0.5, -0.75]), device)
    check_grads(lambda a: cm.frobulate(a, [3, 4]), (x,), order=1, modes=["rev"])
    check_grads(cm.polyval, (coeffs, x), order=1, modes=["rev"])
    for padding in ("SAME", "VALID"):
        check_grads(lambda a, t, p=padding: cm.fir_filter(a, t, padding=p), (x, taps), 1, ["rev"])
    check_grads(lambda a, k: cm.interpolate(a + 0.013, k, -0.9, 0.8), (x, coeffs), 1, ["rev"])


@pytest.mark.parametrize("count", [1, 17, 100, 4096])
def test_coefficient_gradient_of_many_coefficients_matches_float64(device, count):
    rng = np.random.default_rng(count)
    x, grad = rng.uniform(-1.02, 1.02, size=(2, 37)), rng.standard_normal((2, 37))
    expected, magnitude = polyval_coefficient_gradient(count, x, grad)
    x_on_device = jax.device_put(x, device)
    coeffs = jax.device_put(rng.standard_normal(count), device)
    result = jax.jit(jax.grad(lambda c: (cm.polyval(c, x_on_device) * grad).sum()))(coeffs)
    assert np.all(np.abs(np.asarray(result) - expected) <= 1e-13 * magnitude)


def test_static_tables_give_the_array_tables_gradients_for_the_data(device):
    x = jax.device_put(np.linspace(-1, 1, 11).reshape(1, 11), device)
    coeffs, taps = [0.5, -1.0, 2.0, 0.25], [0.25, 0.5, -0.75]
    check_grads(lambda a: cm.polyval(coeffs, a), (x,), order=1, modes=["rev"])
    cases = [
        (lambda a, c: cm.polyval(c, a), coeffs),
        (lambda a, k: cm.interpolate(a + 0.013, k, -0.9, 0.8), coeffs),
    ] + [
        (lambda a, t, p=padding: cm.fir_filter(a, t, padding=p), taps)
        for padding in ("SAME", "VALID")
    ]
    for op, values in cases:
        check_grads(lambda a, op=op, v=values: op(a, v), (x,), order=1, modes=["rev"])
        static = jax.grad(lambda a, op=op, v=values: op(a, v).sum())(x)
        array = jax.grad(lambda a, op=op, v=values: op(a, jnp.asarray(v)).sum())(x)
        np.testing.assert_array_equal(np.asarray(static), np.asarray(array))


def test_eager_calls_trace_the_op_once_per_table_and_shape(device, monkeypatch):
    """Eager calls of the same op, attributes and table form reuse one traced and compiled call
    (a custom_vjp traced at every call costs milliseconds for a long static table); a new
    static table, attribute or shape traces again, with its own results."""
    traces = []
    ffi_call = jax.ffi.ffi_call

    def counted(*args, **kwargs):
        traces.append(args[0])
        return ffi_call(*args, **kwargs)

    monkeypatch.setattr(jax.ffi, "ffi_call", counted)
    # Compiled calls and traced functions serve every device: another device's run of this test
    # in this process would have traced these tables and shapes already.
    other = 0 if device.platform == "cpu" else 1
    width = 32 + 2 * other
    x = jax.device_put(np.linspace(-1, 1, 2 * width, dtype=np.float32).reshape(2, width), device)
    taps = [0.125, 0.25, 0.5, 0.126 + 0.001 * other]
    array = jax.device_put(np.asarray(taps, np.float32), device)
    cases = [(taps, "SAME"), (taps, "VALID"), (taps[::-1], "SAME"), (array, "SAME")]
    for table, padding in cases:
        expected = fir_fma_reference(np.asarray(x), np.asarray(table, np.float32), padding)
        first = len(traces)
        for _ in range(3):
            y = cm.fir_filter(x, table, padding=padding)
            np.testing.assert_array_equal(np.asarray(y), expected)
        assert len(traces) - first == 1, (padding, traces[first:])
    smaller = jax.device_put(np.ones((1, 31), np.float32), device)
    before = len(traces)
    cm.fir_filter(smaller, taps)  # a shape this table has not run on
    assert len(traces) == before + 1


@pytest.mark.skipif(not any(d.platform == "gpu" for d in jax.devices()), reason="needs a GPU")
def test_a_static_table_is_uploaded_at_most_once_per_content():
    """A static table is an attribute: the same host bytes at every call, passed by value when
    small and otherwise uploaded into a bank slot once, the later calls skipping the copy."""
    gpu = next(d for d in jax.devices() if d.platform == "gpu")
    x = jax.device_put(np.ones(4096, np.float32), gpu)
    table = np.arange(5000, dtype=np.int32) % 7
    step = jax.jit(lambda a: cm.frobulate(a, table))
    np.testing.assert_array_equal(np.asarray(step(x)), 1 + table.sum())
    before = cm.upload_stats()
    for _ in range(5):
        np.testing.assert_array_equal(np.asarray(step(x)), 1 + table.sum())
    after = cm.upload_stats()
    assert after["upload_from_pageable_host"] == before["upload_from_pageable_host"]
    small = jax.jit(lambda a: cm.polyval([2.0, 1.0], a))
    small(x).block_until_ready()
    by_value = cm.upload_stats()["by_value_launch"]
    np.testing.assert_array_equal(np.asarray(small(x)), 3.0)
    assert cm.upload_stats()["by_value_launch"] >= by_value + 1


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: cm.frobulate(jnp.ones(3), []), "1 to 1048576"),
        (lambda: cm.frobulate(jnp.ones(3), [2**31]), "fit int32"),
        (lambda: cm.frobulate(jnp.ones(3), [1.5]), "int32"),
        (lambda: cm.frobulate(jnp.ones(3, jnp.int32), [1]), "float32 or float64"),
        (lambda: cm.polyval(jnp.ones((2, 2)), jnp.ones(3)), "rank 1"),
        (lambda: cm.polyval(jnp.ones(1048577), jnp.ones(3)), "1 to 1048576"),
        (lambda: cm.fir_filter(jnp.float32(1), [1.0]), "rank 1 or more"),
        (lambda: cm.fir_filter(jnp.ones(3), [1.0], padding="FULL"), "SAME"),
        (lambda: cm.interpolate(jnp.ones(3), [1.0], 0.0, 1.0), "2 to 1048576"),
        (lambda: cm.interpolate(jnp.ones(3), jnp.ones(1048577), 0.0, 1.0), "2 to 1048576"),
        (lambda: cm.interpolate(jnp.ones(3), [1.0, 2.0], 1.0, 1.0), "lo < hi"),
    ],
)
def test_bad_input_raises_when_traced_and_the_next_call_is_right(call, message):
    with pytest.raises(ValueError, match=message):
        call()
    np.testing.assert_array_equal(np.asarray(cm.frobulate(jnp.zeros(2), [1, 2])), [3, 3])


@pytest.mark.parametrize(
    ("target", "table", "attributes", "message"),
    [
        ("constmem_polyval", np.ones(3, np.int32), {}, "coeffs must be float32; got int32"),
        ("constmem_frobulate", np.ones(3, np.float32), {}, "table must be int32; got float32"),
        (
            "constmem_fir_filter",
            np.ones(3, np.float64),
            {"padding": "SAME"},
            "taps must be float32",
        ),
    ],
)
def test_the_handlers_refuse_a_table_of_another_dtype(target, table, attributes, message):
    # Past the wrapper's checks: the FFI handler's own, an error that names the table, and the
    # next call right.
    x = jnp.ones(8, jnp.float32)
    call = jax.ffi.ffi_call(target, jax.ShapeDtypeStruct(x.shape, x.dtype))
    with pytest.raises(Exception, match=message):
        np.asarray(call(x, jnp.asarray(table), **attributes))
    np.testing.assert_array_equal(np.asarray(cm.polyval([2.0, 1.0], x)), 3.0)


def test_same_bits_as_torch_and_tensorflow():
    torch = pytest.importorskip("torch")
    import constmem.torch as ct

    rng = np.random.default_rng(9)
    x = rng.standard_normal((4, 200)).astype(np.float32)
    table = rng.integers(-1000, 1000, size=1500, dtype=np.int32)
    coeffs = rng.standard_normal(17).astype(np.float32)
    taps = rng.standard_normal(63).astype(np.float32)
    knots = rng.standard_normal(5000).astype(np.float32)
    ours = [
        cm.frobulate(x, table),
        cm.polyval(coeffs, x),
        cm.fir_filter(x, taps, padding="SAME"),
        cm.fir_filter(x, taps, padding="VALID"),
        cm.interpolate(x, knots, -2.5, 2.5),
    ]
    tx = torch.from_numpy(x)
    theirs = [
        ct.frobulate(tx, table.tolist()),
        ct.polyval(coeffs.tolist(), tx),
        ct.fir_filter(tx, torch.from_numpy(taps), padding="SAME"),
        ct.fir_filter(tx, taps.tolist(), padding="VALID"),
        ct.interpolate(tx, torch.from_numpy(knots), -2.5, 2.5),
    ]
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(np.asarray(a), b.numpy())
    try:
        import constmem.tensorflow as ctf
    except ImportError:
        return
    tf_results = [
        ctf.frobulate(x, table),
        ctf.polyval(coeffs, x),
        ctf.fir_filter(x, taps, padding="SAME"),
        ctf.fir_filter(x, taps, padding="VALID"),
        ctf.interpolate(x, knots, -2.5, 2.5),
    ]
    for a, b in zip(ours, tf_results, strict=True):
        np.testing.assert_array_equal(np.asarray(a), b.numpy())


_COMMAND_BUFFER_PROGRAM = """
import sys
import numpy as np
import jax
import jax.numpy as jnp
import constmem.jax as cm

rng = np.random.default_rng(3)
x = jnp.asarray(rng.standard_normal((16, 4096)), jnp.float32)
coeffs = jnp.asarray(rng.standard_normal(300) / 300, jnp.float32)
taps = jnp.asarray(rng.standard_normal(63), jnp.float32)
table = jnp.asarray(rng.integers(-99, 99, 2000), jnp.int32)


@jax.jit
def step(x, coeffs, taps, table):
    y = cm.fir_filter(cm.polyval(coeffs, x), taps)
    y = cm.interpolate(y, coeffs, -3.0, 3.0)
    return cm.polyval([0.5, 1.0], cm.frobulate(y, table))


outs = [np.asarray(step(x * i, coeffs * i, taps, table + i)) for i in range(1, 5)]
np.save(sys.argv[1], np.stack(outs))
print("captured_launch", cm.upload_stats()["captured_launch"])
"""


@pytest.mark.skipif(not any(d.platform == "gpu" for d in jax.devices()), reason="needs a GPU")
def test_command_buffers_on_and_off_give_the_same_bits(tmp_path):
    """XLA records the handlers into CUDA graphs (kCmdBufferCompatible) when command buffers
    cover custom calls, and replays them with new inputs and tables: the bits do not change."""
    from subprocesses import python_env, run_python

    script = tmp_path / "program.py"
    script.write_text(_COMMAND_BUFFER_PROGRAM)
    flags = {
        "on": "--xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL --xla_gpu_graph_min_graph_size=1",
        "off": "--xla_gpu_enable_command_buffer=",
    }
    results, captured = {}, {}
    for name, xla_flags in flags.items():
        env = python_env(XLA_FLAGS=xla_flags, XLA_PYTHON_CLIENT_PREALLOCATE="false")
        out = run_python(str(script), str(tmp_path / f"{name}.npy"), env=env).stdout
        captured[name] = int(out.split("captured_launch")[-1])
        results[name] = np.load(tmp_path / f"{name}.npy")
    assert captured["off"] == 0
    assert captured["on"] > 0, "the handlers ran inside a command buffer"
    np.testing.assert_array_equal(results["on"], results["off"])


_SHARDED_PROGRAM = """
import numpy as np
import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P
import constmem.jax as cm

assert len(jax.devices()) == 2, jax.devices()
mesh = jax.make_mesh((2,), ("rows",))
rng = np.random.default_rng(4)
x = rng.standard_normal((8, 300)).astype(np.float32)
taps = rng.standard_normal(17).astype(np.float32)
coeffs = jnp.asarray(rng.standard_normal(9).astype(np.float32))


def step(a, c):
    return cm.fir_filter(cm.polyval(c, a), taps)


expected = np.asarray(jax.jit(step)(x, coeffs))
sharded = jax.device_put(x, NamedSharding(mesh, P("rows")))
# Each device filters its own rows with the op; XLA runs the calls where the data is.
per_shard = jax.jit(
    jax.shard_map(step, mesh=mesh, in_specs=(P("rows"), P()), out_specs=P("rows"))
)(sharded, coeffs)
assert len(per_shard.sharding.device_set) == 2
np.testing.assert_array_equal(np.asarray(per_shard), expected)
# Without shard_map the partitioner gathers the operands of the custom call: still right.
np.testing.assert_array_equal(np.asarray(jax.jit(step)(sharded, coeffs)), expected)
print("sharded ok")
"""


def test_shard_map_over_two_devices_gives_the_one_device_bits():
    """Two CPU devices (XLA's host platform split in two): the ops under `jax.shard_map` and
    under a jit of sharded inputs give the unsharded result bit for bit."""
    from subprocesses import python_env, run_python

    if not hasattr(jax, "shard_map"):
        pytest.skip("this JAX has no jax.shard_map")
    env = python_env(XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    assert "sharded ok" in run_python("-c", _SHARDED_PROGRAM, env=env).stdout


def test_the_library_checks_a_call_while_jax_traces(monkeypatch):
    """The op library's own checks (its C++ description's Output) run when JAX traces a call:
    with the Python description's shape rule out of the way, a scalar FirFilter is still a
    ValueError from make_jaxpr, which compiles and runs nothing."""
    from constmem import _registry

    check = _registry.call_checker(cm.library_path())
    spec = cm.OPS["fir_filter"]
    assert check(spec, "float32", (4, 100), 5, {"padding": "VALID"}) == (4, 96)
    with pytest.raises(ValueError, match="padding must be one of SAME/VALID; got 'FULL'"):
        check(spec, "float32", (4, 100), 5, {"padding": "FULL"})
    monkeypatch.setattr(cm, "_output_shape", lambda spec, shape, size, attrs: tuple(shape))
    with pytest.raises(ValueError, match="x must have rank 1 or more"):
        jax.make_jaxpr(lambda x: cm.fir_filter(x, [0.5, 0.5]))(jnp.float32(1))
    jax.make_jaxpr(lambda x: cm.fir_filter(x, [0.5, 0.5]))(jnp.ones(8))  # a good call traces


def test_the_gradient_namespace_has_the_standard_functions_and_sigmoid():
    F = cm.JaxArrays(cm.OPS["polyval"], {})
    t = jnp.linspace(-3, 3, 7, dtype=jnp.float64)
    values = np.asarray(t)
    np.testing.assert_allclose(np.asarray(F.sigmoid(t)), 1 / (1 + np.exp(-values)), rtol=1e-15)
    np.testing.assert_allclose(np.asarray(F.exp(t)), np.exp(values), rtol=1e-15)
    np.testing.assert_allclose(np.asarray(F.tanh(t)), np.tanh(values), rtol=1e-15)


def test_gaussian_blur_with_sigma_tensors_has_torchs_bits_and_maps_over_sigma(device):
    """Per-image sigma: the same bits as PyTorch (on its CPU and GPU), also under jax.vmap over the
    images and sigmas; vmap over a batch of sigmas for one batch of images."""
    torch = pytest.importorskip("torch")
    import constmem.torch as ct

    rng = np.random.default_rng(26)
    torch_devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for dtype, k, tol in ((np.float32, [31, 9], 2e-6), (np.float64, [3, 5], 1e-13)):
        x = rng.uniform(0, 1, (3, 2, 12, 17)).astype(dtype)
        sigmas = rng.uniform(0.3, 6.0, (3, 2))
        images, sigma = jax.device_put(x, device), jax.device_put(sigmas, device)
        ours = np.asarray(jax.jit(lambda v, s, k=k: cm.gaussian_blur(v, k, s))(images, sigma))
        for torch_device in torch_devices:
            data, per_image = (torch.from_numpy(a).to(torch_device) for a in (x, sigmas))
            np.testing.assert_array_equal(ours, ct.gaussian_blur(data, k, per_image).cpu().numpy())
        mapped = jax.jit(jax.vmap(lambda v, s, k=k: cm.gaussian_blur(v, k, s)))(images, sigma)
        np.testing.assert_array_equal(np.asarray(mapped), ours)
        single = cm.gaussian_blur(images[:1], k, sigmas[0].tolist())  # torchvision's float64 taps
        np.testing.assert_allclose(ours[0], np.asarray(single)[0], rtol=0, atol=tol)
    blur = jax.jit(lambda v, s: cm.gaussian_blur(v, 5, s))
    blurred = jax.jit(jax.vmap(blur, in_axes=(None, 0)))(images, sigma[:2])
    for i in range(2):
        expected = blur(images, jnp.broadcast_to(sigma[i], (3, 2)))
        np.testing.assert_array_equal(np.asarray(blurred[i]), np.asarray(expected))


def test_no_gradient_flows_through_uint8_images(device):
    """uint8 results are rounded: a gradient to a jax.Array table is zero (as for JAX's own
    integer results), not an error, and the values are the same as without differentiation."""
    images = jax.device_put(np.arange(48, dtype=np.uint8).reshape(1, 1, 6, 8), device)
    taps = jax.device_put(np.asarray([0.25, 0.5, 0.25, 0.2, 0.6, 0.2], np.float32), device)

    def total(t):
        return cm.separable_filter(images, t[:3], t[3:]).astype(jnp.float32).sum()

    value, grad = jax.value_and_grad(total)(taps)
    np.testing.assert_array_equal(np.asarray(grad), np.zeros(6, np.float32))
    assert float(value) == float(total(taps))


def test_the_sharding_rule_of_several_outputs_follows_each_output_axes():
    """Each output's axis that follows a split data axis shares its factor; one of its own, or
    one following a WHOLE axis, is a factor never split. One output's rule is as it was."""
    from constmem.jax import _partitioning
    from constmem.ops import BATCH, WHOLE, Axes, Halo

    axes = Axes((BATCH, WHOLE, Halo(1, 1)), (None,), ((0, 2), (None, 1)))
    outputs = _partitioning.output_axes(axes, (2, 2))
    rule, replicated, _ = _partitioning.sharding_rule(axes, (4, 6, 8), (3,), outputs)
    assert rule == "d0 w1 d2, t0 -> d0 d2, o1a0 o1a1"
    assert replicated == ("w1", "t0", "o1a0", "o1a1")
    # Without `outputs`, output j's axis k follows the data's axis k.
    default = _partitioning.output_axes(Axes((BATCH, WHOLE), (None,)), (2, 1))
    assert default == ((0, 1), (0,))
    with pytest.raises(ValueError, match=r"ranks \[2, 2\] for outputs of ranks \[3, 2\]"):
        _partitioning.output_axes(axes, (3, 2))
    one = _partitioning.sharding_rule(Axes((BATCH, WHOLE), (None,)), (4, 6), (3,))
    assert one == ("d0 w1, t0 -> d0 r1", ("w1", "t0", "r1"), {})
