# SPDX-License-Identifier: Apache-2.0
"""ApplyGain in JAX against NumPy on the CPU and every GPU, static and array gains, jit, vmap and
grad."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import apply_gain_ops  # noqa: E402
import jax.numpy as jnp  # noqa: E402

DEVICES = jax.devices("cpu") + [d for d in jax.devices() if d.platform == "gpu"]


@pytest.fixture(scope="module")
def ops():
    return apply_gain_ops.jax()


@pytest.mark.parametrize("device", DEVICES, ids=str)
@pytest.mark.parametrize("rows", [1, 7, 1024, 1025, 4096])
def test_matches_numpy_under_jit(ops, device, rows):
    rng = np.random.default_rng(rows)
    x = jax.device_put(rng.standard_normal((rows, 33)).astype(np.float32), device)
    gains = rng.standard_normal(rows).astype(np.float32)
    expected = np.asarray(x) * gains[:, None]
    array = jax.jit(ops.apply_gain)(x, jax.device_put(gains, device))
    static = jax.jit(lambda v: ops.apply_gain(v, gains.tolist()))(x)
    np.testing.assert_array_equal(np.asarray(array), expected)
    np.testing.assert_array_equal(np.asarray(static), expected)


def test_vmap_and_grad(ops):
    rng = np.random.default_rng(5)
    x = jnp.asarray(rng.standard_normal((4, 3, 6)).astype(np.float32))
    gains = jnp.asarray(rng.standard_normal((4, 3)).astype(np.float32))
    batched = jax.vmap(ops.apply_gain)(x, gains)  # a table per batch element
    np.testing.assert_array_equal(np.asarray(batched), np.asarray(x * gains[..., None]))
    grad_x, grad_gains = jax.grad(lambda a, g: (ops.apply_gain(a, g) * 2).sum(), (0, 1))(
        x[0], gains[0]
    )
    np.testing.assert_allclose(np.asarray(grad_x), 2 * np.broadcast_to(gains[0][:, None], (3, 6)))
    np.testing.assert_allclose(np.asarray(grad_gains), 2 * np.asarray(x[0]).sum(-1), rtol=1e-6)


def test_bad_input_is_a_value_error_when_traced(ops):
    with pytest.raises(ValueError, match="gains must have 1 to 4096 entries; got 4097"):
        ops.apply_gain(jnp.ones((4097, 2)), jnp.ones(4097))
    with pytest.raises(ValueError, match="gains must be float32; got int32"):
        ops.apply_gain(jnp.ones((2, 2)), jnp.ones(2, jnp.int32))
    assert float(ops.apply_gain(jnp.ones((2, 4)), [2.0, 3.0])[1, 0]) == 3.0


def test_placement_of_answers_for_the_librarys_own_ops(ops):
    import constmem.jax as cm

    with pytest.raises(ValueError, match="op must be one of apply_gain; got 'polyval'"):
        ops.placement_of("polyval", 4)
    with pytest.raises(ValueError, match="got 'apply_gain'"):
        cm.placement_of("apply_gain", 4)
    with pytest.raises(ValueError, match="gains must have 1 to 4096 entries; got 4097"):
        ops.placement_of("apply_gain", 4097)
    on_host = ops.placement_of("apply_gain", 4, "float32", "host")
    if on_host is None:
        pytest.skip("built without GPU kernels")
    assert on_host == "by_value"
    assert ops.placement_of("apply_gain", 4, "float32", "device") == "constant_bank"


@pytest.mark.parametrize("device", DEVICES, ids=str)
def test_table_placements_count_the_librarys_own_launches(ops, device):
    """upload_stats and table_placements read this library's counters, not constmem's."""
    import constmem.jax as cm

    assert ops.library_path() != cm.library_path()
    assert set(ops.upload_stats()) == set(cm.upload_stats())
    x = jax.device_put(np.ones((3, 8), np.float32), device)
    with cm.table_placements() as constmems, ops.table_placements() as seen:
        ops.apply_gain(x, [1.0, 2.0, 3.0]).block_until_ready()
    # CPU handlers place nothing; a GPU launch puts a small host table by value.
    on_gpu = device.platform == "gpu"
    assert seen.placement == (
        ops.placement_of("apply_gain", 3, "float32", "host") if on_gpu else None
    )
    assert constmems.counts == {}  # constmem's own library launched nothing
