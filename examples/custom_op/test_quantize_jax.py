# SPDX-License-Identifier: Apache-2.0
"""Quantize in JAX: codes and absmax against NumPy's bitsandbytes-exact reference on every device,
eagerly, under jit and vmap; absmax's gradient (none to the codes); the XLA FFI handler called
directly with results of the wrong count, dtype or shape; a call sharded over 4 simulated CPU
devices; the same bits as PyTorch's."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = jax.numpy
from dequantize_ops import NF4  # noqa: E402
from example_libraries import run_on_cpu_devices  # noqa: E402
from quantize_ops import FP4, random_case, reference  # noqa: E402
from quantize_ops import jax as quantize  # noqa: E402

DTYPES = [jnp.float32, jnp.float16, jnp.bfloat16]


@pytest.fixture(scope="module")
def ops():
    return quantize()


@pytest.mark.parametrize("device", jax.devices(), ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: jnp.dtype(d).name)
@pytest.mark.parametrize(("shape", "block"), [((4096,), 64), ((3, 130), 64), ((5, 38), 7)])
def test_codes_and_absmax_equal_the_reference(ops, device, dtype, shape, block):
    x = jax.device_put(jnp.asarray(random_case(shape, seed=sum(shape) + block), dtype), device)
    for codebook in (NF4, FP4):
        want_codes, want_absmax = reference(np.asarray(x, np.float32), codebook, block)
        jitted = jax.jit(lambda x, cb: ops.quantize(x, cb, block=block))
        for codes, absmax in (
            ops.quantize(x, codebook, block=block),
            ops.quantize(x, jnp.asarray(codebook), block=block),
            jitted(x, jnp.asarray(codebook)),
        ):
            assert codes.dtype == jnp.uint8 and codes.shape == (*shape[:-1], shape[-1] // 2)
            assert absmax.dtype == jnp.float32 and absmax.shape == want_absmax.shape
            np.testing.assert_array_equal(np.asarray(codes), want_codes)
            np.testing.assert_array_equal(np.asarray(absmax), want_absmax)


def test_vmap_quantizes_each_item_alone(ops):
    x = jnp.asarray(random_case((3, 2, 50), seed=2))
    codes, absmax = jax.vmap(lambda item: ops.quantize(item, NF4, block=16))(x)
    assert codes.shape == (3, 2, 25) and absmax.shape == (3, 7)
    for i in range(3):
        want_codes, want_absmax = reference(np.asarray(x[i]), NF4, 16)
        np.testing.assert_array_equal(np.asarray(codes[i]), want_codes)
        np.testing.assert_array_equal(np.asarray(absmax[i]), want_absmax)


def test_absmax_gradient_is_that_of_max_abs(ops):
    x = jnp.asarray(random_case((3, 20), seed=9))
    x = x.at[0, 2].set(-jnp.abs(x[0, :8]).max())  # a tie within the first block
    weights = jnp.asarray(np.random.default_rng(0).standard_normal(8), jnp.float32)

    def loss(x):
        _, absmax = ops.quantize(x, jnp.asarray(NF4), block=8)
        return (absmax * weights).sum()

    def loss_ref(x):  # JAX's own max, whose gradient ties share equally
        padded = jnp.pad(jnp.abs(x.reshape(-1)), (0, 4)).reshape(-1, 8)
        return (padded.max(1) * weights).sum()

    got, want = jax.grad(loss)(x), jax.grad(loss_ref)(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    assert float(jnp.abs(got).sum()) > 0
    # The codes take no gradient: through them, x's is zero.
    zero = jax.grad(lambda x: ops.quantize(x, NF4, block=8)[0].astype(jnp.float32).sum())(x)
    assert not np.any(np.asarray(zero))


def _ffi(results, x, codebook, block=64):
    return jax.ffi.ffi_call("example_quantize", results)(x, codebook, block=np.int64(block))


def test_the_ffi_handler_checks_every_result_it_is_given(ops):
    """A direct caller's results of the wrong count, dtype or shape are refused, never written."""
    x, codebook = jnp.asarray(random_case((4, 64), seed=1)), jnp.asarray(NF4)
    codes = jax.ShapeDtypeStruct((4, 32), jnp.uint8)
    absmax = jax.ShapeDtypeStruct((4,), jnp.float32)
    got = _ffi((codes, absmax), x, codebook)
    want = reference(np.asarray(x), NF4, 64)
    np.testing.assert_array_equal(np.asarray(got[0]), want[0])
    np.testing.assert_array_equal(np.asarray(got[1]), want[1])
    bad = [
        ((codes,), r"example_quantize gives 2 results \(codes, absmax\); got 1"),
        ((codes, absmax, absmax), r"example_quantize gives 2 results \(codes, absmax\); got 3"),
        (
            (codes, jax.ShapeDtypeStruct((4,), jnp.float16)),
            r"quantize's absmax must be float32 \(quantize's output dtype\); got float16",
        ),
        (
            (jax.ShapeDtypeStruct((4, 31), jnp.uint8), absmax),
            r"quantize's codes must have shape \[4, 32\] for x of shape \[4, 64\]; got \[4, 31\]",
        ),
        (
            (codes, jax.ShapeDtypeStruct((3,), jnp.float32)),
            r"quantize's absmax must have shape \[4\] for x of shape \[4, 64\]; got \[3\]",
        ),
    ]
    for results, message in bad:
        with pytest.raises(Exception, match=message):
            jax.block_until_ready(_ffi(results, x, codebook))


def test_bad_input_names_the_argument(ops):
    x = jnp.asarray(random_case((4, 64), seed=6))
    with pytest.raises(ValueError, match="x must be float32, float16 or bfloat16; got int32"):
        ops.quantize(x.astype(jnp.int32), NF4)
    odd = r"x's last dimension must be even \(two codes a byte\); got 63"
    with pytest.raises(ValueError, match=odd):
        ops.quantize(x[:, :63], NF4)
    with pytest.raises(ValueError, match="codebook must have exactly 16 entries; got 15"):
        ops.quantize(x, jnp.asarray(NF4[:15]))
    with pytest.raises(ValueError, match="block must be 1 to 2"):
        ops.quantize(x, NF4, block=0)


def test_the_same_bits_as_pytorch(ops):
    torch = pytest.importorskip("torch")
    from quantize_ops import torch as torch_ops

    x = random_case((2, 300), seed=9)
    ours = ops.quantize(x, FP4, block=32)
    theirs = torch_ops().quantize(torch.from_numpy(x), FP4, block=32)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(np.asarray(a), b.numpy())


# On 4 simulated CPU devices (set before JAX starts: a process of its own), x split along each
# axis in turn and along both against the call on one device: every axis is WHOLE (absmax follows
# the flat order), so each call gathers x and gives both outputs whole.
SHARDED = """
import jax, numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P
from dequantize_ops import NF4
from quantize_ops import jax as quantize, random_case, reference
ops = quantize()
x = random_case((8, 128), 4)
mesh = jax.make_mesh((2, 2), ("a", "b"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
fn = jax.jit(lambda x: ops.quantize(x, NF4, block=48))
want = reference(x, NF4, 48)
for spec in (P("a"), P(None, "b"), P("a", "b"), P(("a", "b"))):
    codes, absmax = fn(jax.device_put(x, NamedSharding(mesh, spec)))
    assert np.array_equal(np.asarray(codes), want[0]), spec
    assert np.array_equal(np.asarray(absmax), want[1]), spec
    assert codes.shape == (8, 64) and absmax.shape == (22,)
explicit = jax.make_mesh((4,), ("a",), axis_types=(jax.sharding.AxisType.Explicit,))
codes, absmax = fn(jax.device_put(x, NamedSharding(explicit, P("a"))))
assert np.array_equal(np.asarray(codes), want[0]) and np.array_equal(np.asarray(absmax), want[1])
print("sharded: PASS")
"""


def test_a_sharded_call_gives_the_one_device_bits():
    result = run_on_cpu_devices(SHARDED)
    assert result.returncode == 0 and "sharded: PASS" in result.stdout, result.stderr[-3000:]
