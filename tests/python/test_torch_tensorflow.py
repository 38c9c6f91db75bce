# SPDX-License-Identifier: Apache-2.0
"""The PyTorch and TensorFlow ops give the same bits on the same inputs, every table form.

On a GPU both frameworks equal the exact references of test_torch.py and the TensorFlow tests
bit for bit, so they equal each other there too; here both run in one process on the CPU (and on
a GPU where both frameworks see one).
"""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
torch = pytest.importorskip("torch")

import constmem.tensorflow as cmtf  # noqa: E402
import constmem.torch as cmt  # noqa: E402

DEVICES = [("cpu", "/CPU:0")]
if torch.cuda.is_available() and tf.config.list_logical_devices("GPU"):
    DEVICES.append(("cuda", "/GPU:0"))


def both(torch_fn, tf_fn, tf_device):
    with tf.device(tf_device):
        expected = tf_fn().numpy()
    return torch_fn().detach().cpu().numpy(), expected


def cases_of(tx, x, table, coeffs, taps, static):
    """(PyTorch call, TensorFlow call) pairs with the tables static, or as tensors (PyTorch's on
    the data's device and on the CPU)."""

    def tt(v, on_device=True):
        return v.tolist() if static else torch.from_numpy(v).to(tx.device if on_device else "cpu")

    def tft(v):
        return v if static else tf.constant(v)

    return [
        (lambda: cmt.frobulate(tx, tt(table)), lambda: cmtf.frobulate(x, tft(table))),
        (lambda: cmt.frobulate(tx, tt(table, False)), lambda: cmtf.frobulate(x, tft(table))),
        (lambda: cmt.polyval(tt(coeffs), tx), lambda: cmtf.polyval(tft(coeffs), x)),
        (
            lambda: cmt.fir_filter(tx, tt(taps), padding="SAME"),
            lambda: cmtf.fir_filter(x, tft(taps), padding="SAME"),
        ),
        (
            lambda: cmt.fir_filter(tx, tt(taps, False), padding="VALID"),
            lambda: cmtf.fir_filter(x, tft(taps), padding="VALID"),
        ),
        (
            lambda: cmt.interpolate(tx, tt(taps), -7.0, 7.0),
            lambda: cmtf.interpolate(x, tft(taps), -7.0, 7.0),
        ),
        (
            lambda: cmt.interpolate(tx, tt(coeffs, False), -0.1, 0.2),
            lambda: cmtf.interpolate(x, tft(coeffs), -0.1, 0.2),
        ),
    ]


@pytest.mark.parametrize(("torch_device", "tf_device"), DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_op_and_form_is_bitwise_equal(torch_device, tf_device, dtype):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((4, 300)) * 3).astype(dtype)
    table = rng.integers(-1000, 1000, size=1500, dtype=np.int32)
    coeffs = rng.standard_normal(17).astype(dtype)
    taps = rng.standard_normal(63).astype(dtype)
    tx = torch.from_numpy(x).to(torch_device)
    cases = cases_of(tx, x, table, coeffs, taps, static=True) + cases_of(
        tx, x, table, coeffs, taps, static=False
    )
    for torch_fn, tf_fn in cases:
        got, expected = both(torch_fn, tf_fn, tf_device)
        np.testing.assert_array_equal(got, expected)


def test_gradients_are_equal():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 50))
    coeffs = rng.standard_normal(6)
    taps = rng.standard_normal(7)
    tx = torch.from_numpy(x).requires_grad_(True)
    tc = torch.from_numpy(coeffs).requires_grad_(True)
    tt = torch.from_numpy(taps).requires_grad_(True)
    (
        cmt.polyval(tc, tx).sum()
        + cmt.fir_filter(tx, tt).sum()
        + (cmt.interpolate(tx, tt, -2.0, 1.5) ** 2).sum()
    ).backward()
    vx, vc, vt = tf.Variable(x), tf.Variable(coeffs), tf.Variable(taps)
    with tf.GradientTape() as tape:
        loss = (
            tf.reduce_sum(cmtf.polyval(vc, vx))
            + tf.reduce_sum(cmtf.fir_filter(vx, vt))
            + tf.reduce_sum(cmtf.interpolate(vx, vt, -2.0, 1.5) ** 2)
        )
    gx, gc, gt = tape.gradient(loss, [vx, vc, vt])
    np.testing.assert_allclose(tx.grad.numpy(), gx.numpy(), rtol=1e-12)
    np.testing.assert_allclose(tc.grad.numpy(), gc.numpy(), rtol=1e-12)
    np.testing.assert_allclose(tt.grad.numpy(), gt.numpy(), rtol=1e-12)


@pytest.mark.parametrize(
    ("op", "entries", "dtype", "source", "placement"),
    [
        ("interpolate", 300, "float32", "device", "shared_memory"),
        ("interpolate", 100, "float32", "host", "shared_memory"),
        ("interpolate", 300, "float64", "device", "global_memory"),
        ("fir_filter", 100, "float32", "host", "by_value"),
        ("fir_filter", 2048, "float32", "device", "constant_bank"),
        ("fir_filter", 2049, "float32", "device", "global_memory"),
        ("separable_filter", 6, "uint8", "host", "by_value"),
    ],
)
def test_placement_of_gives_each_ops_own_rule_in_both_libraries(
    op, entries, dtype, source, placement
):
    """Asked from Python with no launch and no GPU: lookups in a large call never reach constant
    memory (a small host table travels by value and is staged in shared memory), walks over small
    host tables go by value; TensorFlow's library and
    PyTorch's answer alike (None both, built without GPU kernels)."""
    expected = placement if cmt.placement_of("polyval", 1) is not None else None
    assert {cm.placement_of(op, entries, dtype, source) for cm in (cmt, cmtf)} == {expected}
