# SPDX-License-Identifier: Apache-2.0
"""ApplyGain in TensorFlow against NumPy on the CPU and every GPU, every table form and
placement, with its gradients."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
import apply_gain_ops  # noqa: E402

DEVICES = ["/CPU:0"] + [d.name for d in tf.config.list_logical_devices("GPU")]


@pytest.fixture(scope="module")
def ops():
    return apply_gain_ops.tensorflow()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("source", ["input", "host", "attr"])
@pytest.mark.parametrize("rows", [1, 7, 1024, 1025, 4096])  # by value, then the constant bank
def test_matches_numpy(ops, device, source, rows):
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, 33)).astype(np.float32)
    gains = rng.standard_normal(rows).astype(np.float32)
    with tf.device(device):
        y = ops.apply_gain(x, gains, source=source).numpy()
    np.testing.assert_array_equal(y, x * gains[:, None])


@pytest.mark.parametrize("device", DEVICES)
def test_bad_input_is_invalid_argument_and_the_next_call_is_right(ops, device):
    wrong = tf.errors.InvalidArgumentError
    with tf.device(device), pytest.raises(wrong, match="one entry per row"):
        ops.apply_gain(np.ones((3, 4), np.float32), np.ones(2, np.float32))
    with tf.device(device), pytest.raises(wrong, match="1 to 4096 entries; got 4097"):
        ops.apply_gain(np.ones((4097, 2), np.float32), np.ones(4097, np.float32))
    with tf.device(device), pytest.raises(wrong, match="x must be float32; got float64"):
        ops.apply_gain(np.ones((2, 4), np.float64), [2.0, 3.0])
    with tf.device(device):
        assert ops.apply_gain(np.ones((2, 4), np.float32), [2.0, 3.0]).numpy()[1, 0] == 3.0


def test_gradients_match_the_definition(ops):
    rng = np.random.default_rng(3)
    x = tf.constant(rng.standard_normal((2, 3, 5)).astype(np.float32))
    gains = tf.constant(rng.standard_normal(6).astype(np.float32))
    with tf.GradientTape() as tape:
        tape.watch([x, gains])
        y = tf.reduce_sum(ops.apply_gain(x, gains) * 2.0)
    grad_x, grad_gains = tape.gradient(y, [x, gains])
    np.testing.assert_allclose(
        grad_x.numpy(), 2.0 * np.broadcast_to(gains.numpy().reshape(2, 3, 1), x.shape), rtol=1e-6
    )
    np.testing.assert_allclose(grad_gains.numpy(), 2.0 * x.numpy().sum(-1).reshape(-1), rtol=1e-5)


def test_placement_of_answers_for_the_librarys_own_ops(ops):
    import constmem.tensorflow as cm

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


@pytest.mark.parametrize("device", DEVICES)
def test_table_placements_count_the_librarys_own_launches(ops, device):
    """upload_stats and table_placements read this library's counters, not constmem's."""
    import constmem.tensorflow as cm

    assert ops.library_path() != cm.library_path()
    assert set(ops.upload_stats()) == set(cm.upload_stats())
    x = np.ones((3, 8), np.float32)
    with cm.table_placements() as constmems, ops.table_placements() as seen, tf.device(device):
        ops.apply_gain(x, [1.0, 2.0, 3.0], source="attr").numpy()
    # CPU kernels place nothing; a GPU launch puts a small host table by value.
    on_gpu = "GPU" in device
    assert seen.placement == (
        ops.placement_of("apply_gain", 3, "float32", "host") if on_gpu else None
    )
    assert constmems.counts == {}  # constmem's own library launched nothing
