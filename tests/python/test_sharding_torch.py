# SPDX-License-Identifier: Apache-2.0
"""constmem's PyTorch ops on DTensors in 2 and 4 gloo processes (tests/gpu/sharding_torch.py): each
op and sharding bit for bit the single-process call, the placements the ops' axes give, gradients,
FSDP2 training of learned taps and torch.compile."""

import os

import pytest
from subprocesses import run_python

pytest.importorskip("torch")
SCRIPT = os.path.join(os.path.dirname(__file__), "..", "gpu", "sharding_torch.py")


def run(*args):
    result = run_python(SCRIPT, "--backend", "gloo", *args, check=False, timeout=600)
    lines = [line for line in result.stdout.splitlines() if line.startswith("RESULT")]
    assert result.returncode == 0 and lines, (result.stdout[-4000:], result.stderr[-3000:])
    assert lines[-1].endswith("PASS"), lines[-1]
    return lines[-1]


def test_an_empty_shard_gives_zero_gradients():
    # An uneven split leaves some processes no images or rows: their gradients are zeros.
    import constmem.torch as cm
    import torch

    x = torch.zeros((3, 0, 6, 5), requires_grad=True)
    rows, columns = torch.ones(9, requires_grad=True), torch.ones(15, requires_grad=True)
    y = cm.separable_filter(x, rows, columns, taps="per_image")
    grads = torch.autograd.grad(y, [x, rows, columns], torch.ones_like(y))
    assert grads[0].shape == x.shape
    assert torch.equal(grads[1], torch.zeros(9)) and torch.equal(grads[2], torch.zeros(15))
    taps = torch.ones(3, requires_grad=True)
    y = cm.fir_filter(torch.zeros((0, 8), requires_grad=True), taps)
    assert torch.equal(torch.autograd.grad(y, taps, torch.ones_like(y))[0], torch.zeros(3))


def test_two_processes_every_op_and_sharding_fsdp2_and_compile():
    # A 1-D mesh: every op, batch, channels and filtered axes, Partial data, static and tensor
    # tables, per-image taps, gradients; FSDP2 training and torch.compile.
    assert "world=2" in run("--world", "2")


@pytest.mark.slow  # four gloo processes (about 7 s; two run in the test command): test-slow.sh
def test_four_processes_a_two_by_two_mesh():
    assert "world=4" in run("--world", "4")


@pytest.mark.slow  # more dtypes and forms, Inductor (about 90 s on 2 cores)
def test_two_processes_sweep():
    assert "world=2" in run("--world", "2", "--sweep")


@pytest.mark.slow  # every case on 4 processes' 1-D and 2-D meshes, FSDP2 and torch.compile
def test_four_processes_sweep():
    assert "world=4" in run("--world", "4", "--sweep")


@pytest.mark.slow  # one process: the 1-device mesh of a machine with one GPU, on the CPU
def test_one_process_a_one_device_mesh():
    assert "world=1" in run("--world", "1")
