# SPDX-License-Identifier: Apache-2.0
"""Dequantize in JAX: each output dtype against NumPy in float32 rounded by JAX, on every device,
eagerly and under jit; gradients to the codebook and to absmax (none to the codes); the same bits
as PyTorch's."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = jax.numpy
from dequantize_ops import jax as dequantize  # noqa: E402
from dequantize_ops import random_case, reference  # noqa: E402

DTYPES = [jnp.bfloat16, jnp.float16, jnp.float32]


@pytest.fixture(scope="module")
def ops():
    return dequantize()


@pytest.mark.parametrize("device", jax.devices(), ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: jnp.dtype(d).name)
@pytest.mark.parametrize(("shape", "block"), [((4096,), 64), ((3, 37), 7)])
def test_each_output_dtype_equals_the_float32_product_rounded_once(
    ops, device, dtype, shape, block
):
    codes, codebook, absmax = random_case(shape, block, seed=sum(shape) + block)
    x = jax.device_put(codes, device)
    want = jnp.asarray(reference(codes, codebook, absmax, block)).astype(dtype)
    for tables in ((jnp.asarray(codebook), jnp.asarray(absmax)), (codebook, absmax.tolist())):
        y = ops.dequantize(x, *tables, block=block, dtype=dtype)
        assert y.dtype == dtype and y.shape == (*shape[:-1], 2 * shape[-1])
        np.testing.assert_array_equal(np.asarray(y, np.float32), np.asarray(want, np.float32))
    jitted = jax.jit(lambda x, cb, am: ops.dequantize(x, cb, am, block=block, dtype=dtype))
    y = jitted(x, jnp.asarray(codebook), jnp.asarray(absmax))
    np.testing.assert_array_equal(np.asarray(y, np.float32), np.asarray(want, np.float32))


def test_gradients_flow_to_the_codebook_and_absmax(ops):
    codes, codebook, absmax = random_case((3, 40), 16, seed=4)
    weights = jnp.asarray(np.random.default_rng(0).standard_normal((3, 80)), jnp.float32)

    def loss(cb, am):
        return (ops.dequantize(codes, cb, am, block=16, dtype="float32") * weights).sum()

    def loss_ref(cb, am):
        flat = jnp.asarray(codes).reshape(-1).astype(jnp.int32)
        levels = jnp.stack([flat >> 4, flat & 15], -1).reshape(-1)
        y = (cb[levels] * am[jnp.arange(levels.size) // 16]).reshape(3, 80)
        return (y * weights).sum()

    got = jax.grad(loss, (0, 1))(jnp.asarray(codebook), jnp.asarray(absmax))
    want = jax.grad(loss_ref, (0, 1))(jnp.asarray(codebook), jnp.asarray(absmax))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-5)
        assert float(jnp.abs(g).sum()) > 0


def test_bad_dtype_names_the_argument(ops):
    codes, codebook, absmax = random_case((64,), 64, seed=6)
    with pytest.raises(ValueError, match="dtype must be bfloat16, float16 or float32; got int8"):
        ops.dequantize(codes, codebook, absmax, dtype=jnp.int8)


def test_the_same_bits_as_pytorch(ops):
    torch = pytest.importorskip("torch")
    from dequantize_ops import torch as torch_ops

    codes, codebook, absmax = random_case((2, 300), 64, seed=9)
    ours = ops.dequantize(codes, codebook, absmax)
    theirs = torch_ops().dequantize(torch.from_numpy(codes), codebook, absmax)
    assert (
        np.asarray(ours).view(np.uint16).tolist()
        == theirs.view(torch.int16).numpy().view(np.uint16).tolist()
    )
