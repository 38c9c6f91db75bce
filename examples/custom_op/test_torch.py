# SPDX-License-Identifier: Apache-2.0
"""ApplyGain in PyTorch against NumPy on the CPU and every GPU, every table form, opcheck,
torch.compile and gradients."""

import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import apply_gain_ops  # noqa: E402

DEVICES = ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]


@pytest.fixture(scope="module")
def ops():
    return apply_gain_ops.torch()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("form", ["tensor", "host tensor", "list"])
@pytest.mark.parametrize("rows", [1, 7, 1024, 1025, 4096])
def test_matches_numpy(ops, device, form, rows):
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, 33)).astype(np.float32)
    gains = rng.standard_normal(rows).astype(np.float32)
    table = {
        "tensor": torch.from_numpy(gains).to(device),
        "host tensor": torch.from_numpy(gains),
        "list": gains.tolist(),
    }[form]
    y = ops.apply_gain(torch.from_numpy(x).to(device), table)
    np.testing.assert_array_equal(y.cpu().numpy(), x * gains[:, None])


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_compile_and_gradients(ops, device):
    x = torch.randn(3, 4, 5, device=device, requires_grad=True)
    gains = torch.randn(12, device=device, requires_grad=True)
    torch.library.opcheck(
        torch.ops.example.apply_gain.default,
        (
            x,
            gains,
        ),
    )
    torch.library.opcheck(torch.ops.example.apply_gain_static.default, (x, [1.0] * 12))
    compiled = torch.compile(ops.apply_gain, fullgraph=True)
    torch.testing.assert_close(compiled(x, gains), ops.apply_gain(x, gains), rtol=0, atol=0)
    # The loader called inside the compiled function: no graph break.
    loaded = torch.compile(lambda x, g: apply_gain_ops.torch().apply_gain(x, g), fullgraph=True)
    torch.testing.assert_close(loaded(x, gains), ops.apply_gain(x, gains), rtol=0, atol=0)
    (ops.apply_gain(x, gains) * 2).sum().backward()
    torch.testing.assert_close(x.grad, 2 * gains.detach().reshape(3, 4, 1).expand(3, 4, 5))
    torch.testing.assert_close(gains.grad, 2 * x.detach().sum(-1).reshape(-1))


@pytest.mark.parametrize("device", DEVICES)
def test_bad_input_is_a_value_error_and_the_next_call_is_right(ops, device):
    with pytest.raises(ValueError, match="one entry per row"):
        ops.apply_gain(torch.ones(3, 4, device=device), torch.ones(2, device=device))
    with pytest.raises(ValueError, match="gains must be on the CPU or on x's device"):
        ops.apply_gain(torch.ones(3, 4, device=device), torch.ones(3, device="meta"))
    with pytest.raises(ValueError, match="x must be float32; got float64"):
        ops.apply_gain(torch.ones(2, 4, dtype=torch.float64, device=device), [2.0, 3.0])
    assert ops.apply_gain(torch.ones(2, 4, device=device), [2.0, 3.0])[1, 0].item() == 3.0


def test_placement_of_asks_the_ops_own_rule(ops):
    """Where a launch would put the gains, asked with no launch and no GPU."""
    import constmem.torch as cm

    # Each module answers for its own library's ops, with that op's table rule.
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
    import constmem.torch as cm

    assert ops.library_path() != cm.library_path()
    assert set(ops.upload_stats()) == set(cm.upload_stats())
    x = torch.ones(3, 8, device=device)
    with cm.table_placements() as constmems, ops.table_placements() as seen:
        ops.apply_gain(x, [1.0, 2.0, 3.0])
        if device != "cpu":
            torch.cuda.synchronize(device)
    # CPU kernels place nothing; a GPU launch puts a small host table by value.
    expected = None if device == "cpu" else ops.placement_of("apply_gain", 3, "float32", "host")
    assert seen.placement == expected
    assert constmems.counts == {}  # constmem's own library launched nothing


# The first load of the library happens inside a function compiled with fullgraph=True, in a
# process of its own (this module's fixture has loaded it already). Dynamo's tracing is what the
# load could break: the aot_eager backend traces the same graph without Inductor's start-up, seconds
# in a new process (test_opcheck_compile_and_gradients compiles the op with Inductor).
FIRST_LOAD = """
import torch
import constmem.torch
import apply_gain_ops

load = constmem.torch.load_library
path = apply_gain_ops.BUILD + "/_apply_gain_torch.so"

def lazily(x, gains):  # an op wrapper whose first call loads the library
    return apply_gain_ops.torch().apply_gain(x, gains)

def each_call(x, gains):  # load_library itself at every call
    return load(path, apply_gain_ops.DESCRIPTIONS).apply_gain(x, gains) * 2

def compiled(fn):
    return torch.compile(fn, fullgraph=True, backend="aot_eager")

for device in ["cpu"] + (["cuda"] if torch.cuda.is_available() else []):
    for rows in (3, 5):  # a second shape traces again, with the library loaded
        x = torch.randn(rows, 7, device=device)
        gains = torch.randn(rows, device=device)
        expected = x * gains[:, None]
        assert torch.equal(compiled(lazily)(x, gains), expected)
        assert torch.equal(compiled(each_call)(x, gains), 2 * expected)
ops = apply_gain_ops.torch()
assert load(path, dict(apply_gain_ops.DESCRIPTIONS)) is ops  # one module, eagerly too
assert ops.placement_of("apply_gain", 4, "float32", "host") in ("by_value", None)
try:
    load(path, {})
    raise AssertionError("a loaded library was loaded again with other descriptions")
except ValueError as error:
    assert "is loaded already, with the descriptions of apply_gain" in str(error), error
print("ok")
"""


def test_a_first_load_inside_a_compiled_function_does_not_break_the_graph():
    here = os.path.dirname(os.path.abspath(__file__))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "-c", FIRST_LOAD],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-3000:]
