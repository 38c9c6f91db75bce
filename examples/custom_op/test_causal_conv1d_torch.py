# SPDX-License-Identifier: Apache-2.0
"""CausalConv1d (two tables, weight and bias) in PyTorch: against NumPy in float64 and torch's own
conv1d on the CPU and every GPU, each table in every form, gradients to x, weight and bias,
opcheck, torch.compile, bad input naming the table, and placement_of per table."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from causal_conv1d_ops import BUILD, check_placement_of, random_case, reference  # noqa: E402
from causal_conv1d_ops import torch as causal_conv1d  # noqa: E402

DEVICES = ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]
FORMS = ["cpu", "device", "list", "numpy"]


@pytest.fixture(scope="module")
def ops():
    return causal_conv1d()


def torch_reference(x, weight, bias):
    """The same with torch's depthwise conv1d (and its autograd)."""
    channels, length = x.shape[-2:]
    taps = weight.numel() // channels
    rows = F.pad(x.reshape(-1, channels, length), (taps - 1, 0))
    y = F.conv1d(rows, weight.reshape(channels, 1, taps), bias, groups=channels)
    return y.reshape(x.shape)


def form_of(values, form, device):
    """`values` (float32) as one table form next to data on `device`."""
    array = np.asarray(values, np.float32)
    if form == "cpu":
        return torch.from_numpy(array.copy())
    if form == "device":
        return torch.from_numpy(array.copy()).to(device)
    if form == "list":
        return array.tolist()
    return array.copy()


# (x's shape [..., C, L], taps per channel): weights from 3 to 4,200 entries (by value, a constant
# bank slot and global memory on a GPU, 1,025 just past by value), biases from 1 to 257 entries.
CASES = [
    ((4, 50), 3),
    ((2, 3, 4, 37), 1),
    ((1, 1, 9), 5),
    ((2, 5, 64), 205),
    ((1, 257, 40), 4),
    ((3, 2, 300), 2100),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("shape", "taps"), CASES)
def test_matches_numpy_and_conv1d(ops, device, shape, taps):
    x, weight, bias = random_case(shape, taps, seed=sum(shape) + taps)
    y = ops.causal_conv1d(torch.from_numpy(x).to(device), torch.from_numpy(weight), bias.tolist())
    assert y.shape == x.shape and y.dtype == torch.float32 and str(y.device) == device
    np.testing.assert_allclose(y.cpu().numpy(), reference(x, weight, bias), rtol=1e-5, atol=1e-5)
    expected = torch_reference(*(torch.from_numpy(a).to(device) for a in (x, weight, bias)))
    torch.testing.assert_close(y, expected)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("weight_form", FORMS)
@pytest.mark.parametrize("bias_form", FORMS)
def test_every_form_of_each_table_gives_the_same_result(ops, device, weight_form, bias_form):
    """Each table in each form, alone or mixed with the other's: the values the kernel sees are
    the same, so the results are equal to the last bit."""
    if device == "cpu" and "device" in (weight_form, bias_form):
        pytest.skip("a device table needs a GPU")
    for shape, taps in [((2, 6, 33), 4), ((2, 5, 64), 205), ((1, 257, 40), 4)]:
        x, weight, bias = random_case(shape, taps, seed=taps)
        data = torch.from_numpy(x).to(device)
        expected = ops.causal_conv1d(data, torch.from_numpy(weight), torch.from_numpy(bias))
        for _ in range(2):  # the second call reuses a static table's cached host tensor
            y = ops.causal_conv1d(
                data, form_of(weight, weight_form, device), form_of(bias, bias_form, device)
            )
            torch.testing.assert_close(y, expected, rtol=0, atol=0)
        np.testing.assert_allclose(
            y.cpu().numpy(), reference(x, weight, bias), rtol=1e-5, atol=1e-5
        )


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(0, 4, 10), (2, 4, 0), (4, 1)])
def test_empty_data_and_one_sample(ops, device, shape):
    x, weight, bias = random_case(shape, 3, seed=1)
    y = ops.causal_conv1d(torch.from_numpy(x).to(device), weight, bias)
    assert y.shape == shape
    np.testing.assert_allclose(y.cpu().numpy(), reference(x, weight, bias), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("table_device", ["data", "cpu"])
@pytest.mark.parametrize("taps", [1, 4])
def test_gradients_match_conv1d_autograd(ops, device, table_device, taps):
    """x, weight and bias each get conv1d's gradient; a table on the CPU gets its own there."""
    x, weight, bias = random_case((2, 3, 17), taps, seed=taps)
    on = device if table_device == "data" else "cpu"
    ours = [
        torch.from_numpy(x).to(device).requires_grad_(),
        torch.from_numpy(weight).to(on).requires_grad_(),
        torch.from_numpy(bias).to(on).requires_grad_(),
    ]
    theirs = [t.detach().clone().to(device).requires_grad_() for t in ours]
    grad = torch.randn(x.shape, device=device)
    y = ops.causal_conv1d(*ours)
    torch.testing.assert_close(y, torch_reference(*theirs))
    y.backward(grad)
    torch_reference(*theirs).backward(grad)
    for name, a, b in zip(("x", "weight", "bias"), ours, theirs, strict=True):
        assert a.grad is not None, name
        assert a.grad.device == a.device, name
        torch.testing.assert_close(a.grad.to(device), b.grad, msg=name)


@pytest.mark.parametrize("device", DEVICES)
def test_only_the_gradients_asked_for_and_none_to_a_static_table(ops, device):
    x, weight, bias = random_case((2, 3, 17), 4, seed=7)
    data = torch.from_numpy(x).to(device).requires_grad_()
    w = torch.from_numpy(weight).to(device).requires_grad_()
    b = torch.from_numpy(bias).to(device).requires_grad_()
    tx, tw, tb = (t.detach().clone().requires_grad_() for t in (data, w, b))
    grad = torch.randn(x.shape, device=device)
    expected = torch.autograd.grad(torch_reference(tx, tw, tb), (tx, tw, tb), grad)
    # One input at a time.
    for i, wanted in enumerate((data, w, b)):
        (got,) = torch.autograd.grad(ops.causal_conv1d(data, w, b), (wanted,), grad)
        torch.testing.assert_close(got, expected[i])
    # Static tables (a list, NumPy) take no gradient; the tensors among them and x do.
    for weight_form, bias_form in [("list", "numpy"), ("list", "tensor"), ("tensor", "numpy")]:
        tables = (
            w if weight_form == "tensor" else form_of(weight, weight_form, device),
            b if bias_form == "tensor" else form_of(bias, bias_form, device),
        )
        y = ops.causal_conv1d(data, *tables)
        assert y.requires_grad
        inputs = (data, *(t for t in tables if isinstance(t, torch.Tensor)))
        got = torch.autograd.grad(y, inputs, grad)
        wanted = (expected[0], *(expected[1 + i] for i, t in enumerate(tables) if t is w or t is b))
        for g, e in zip(got, wanted, strict=True):
            torch.testing.assert_close(g, e)
    # No tensor needs a gradient: the result needs none.
    assert not ops.causal_conv1d(data.detach(), weight.tolist(), bias).requires_grad


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(ops, device):
    x = torch.randn(2, 3, 11, device=device, requires_grad=True)
    weight = torch.randn(6, device=device, requires_grad=True)
    bias = torch.randn(3, device=device, requires_grad=True)
    torch.library.opcheck(torch.ops.example.causal_conv1d.default, (x, weight, bias))
    torch.library.opcheck(torch.ops.example.causal_conv1d.default, (x, weight.cpu(), bias))
    torch.library.opcheck(
        torch.ops.example.causal_conv1d_static.default, (x, weight.tolist(), bias.tolist())
    )


def graph_ops(fn, *args):
    """The ops in the graph torch.compile(fullgraph=True) traces of fn(*args), and its result."""
    seen = []

    def backend(graph, inputs):
        seen.extend(n.target for n in graph.graph.nodes if n.op == "call_function")
        return graph.forward

    torch._dynamo.reset()
    result = torch.compile(fn, backend=backend, fullgraph=True)(*args)
    return seen, result


@pytest.mark.parametrize("device", DEVICES)
def test_compile_fullgraph_with_tensor_tables_lists_and_both(ops, device):
    x, weight, bias = random_case((2, 4, 33), 3, seed=3)
    data = torch.from_numpy(x).to(device)
    w, b = torch.from_numpy(weight).to(device), torch.from_numpy(bias).to(device)
    expected = ops.causal_conv1d(data, w, b)
    tensor_op = torch.ops.example.causal_conv1d.default
    static_op = torch.ops.example.causal_conv1d_static.default
    w_list, b_list = weight.tolist(), bias.tolist()
    for fn, args, op in [
        (ops.causal_conv1d, (data, w, b), tensor_op),
        (lambda x: ops.causal_conv1d(x, w_list, b_list), (data,), static_op),
        (lambda x, b: ops.causal_conv1d(x, w_list, b), (data, b), tensor_op),
        (lambda x, w: ops.causal_conv1d(x, w, b_list), (data, w), tensor_op),
        (lambda x: causal_conv1d().causal_conv1d(x, w.cpu(), b), (data,), tensor_op),
    ]:
        seen, y = graph_ops(fn, *args)
        assert op in seen and ({tensor_op, static_op} - {op}).isdisjoint(seen), seen
        torch.testing.assert_close(y, expected, rtol=0, atol=0)
        # The default backend (Inductor) compiles it too.
        torch._dynamo.reset()
        torch.testing.assert_close(torch.compile(fn, fullgraph=True)(*args), expected)


@pytest.mark.parametrize("device", DEVICES)
def test_compiled_gradients_match_conv1d_autograd(ops, device):
    x, weight, bias = random_case((2, 3, 17), 4, seed=11)
    ours = [torch.from_numpy(a).to(device).requires_grad_() for a in (x, weight, bias)]
    theirs = [t.detach().clone().requires_grad_() for t in ours]
    grad = torch.randn(x.shape, device=device)
    torch._dynamo.reset()
    torch.compile(ops.causal_conv1d, fullgraph=True)(*ours).backward(grad)
    torch_reference(*theirs).backward(grad)
    for name, a, b in zip(("x", "weight", "bias"), ours, theirs, strict=True):
        torch.testing.assert_close(a.grad, b.grad, msg=name)


def bad_calls(device):
    """(x, weight, bias, the exact message): each table refused under its own name."""
    x = torch.ones(2, 4, 10, device=device)
    w, b = torch.ones(12, device=device), torch.ones(4, device=device)
    on_data = f"on the CPU or on x's device ({device})"
    taps = "weight must have the same number of taps for each of the 4 channels; got {} entries"
    return [
        (x, w, torch.ones(3, device=device), "bias must have one entry per channel (4); got 3"),
        (x, w, [1.0] * 3, "bias must have one entry per channel (4); got 3"),
        (x, w, np.ones(5), "bias must have one entry per channel (4); got 5"),
        (x, w, torch.ones(0), "bias must have 1 to 65536 entries; got 0"),
        (x, w, [0.5] * 65537, "bias must have 1 to 65536 entries; got 65537"),
        (x, torch.ones(13, device=device), b, taps.format(13)),
        (x, [1.0] * 14, b, taps.format(14)),
        (x, [], b, "weight must have 1 to 1048576 entries; got 0"),
        (x, torch.ones(12, dtype=torch.float64), b, "weight must be float32; got float64"),
        (x, w, torch.ones(4, dtype=torch.int32, device=device), "bias must be float32; got int32"),
        (x, torch.ones(4, 3), b, "weight must be a vector (rank 1); got shape (4, 3)"),
        (x, w, np.ones((2, 2)), "bias must be a vector (rank 1); got shape (2, 2)"),
        (x, torch.ones(12, device="meta"), b, f"weight must be {on_data}; got a tensor on meta"),
        (x, w, torch.ones(4, device="meta"), f"bias must be {on_data}; got a tensor on meta"),
        (x, w, [1.0, "a", 2.0, 3.0], "bias must be real numbers; got 'a'"),
        (x, [True] * 12, b, "weight must be real numbers; got True"),
        (x.double(), w, b, "x must be float32; got float64"),
        (x[0, 0], w, b, "x must have rank 2 or more ([..., C, L]); got rank 1"),
    ]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("requires_grad", [False, True])
def test_bad_input_names_the_table_and_the_next_call_is_right(ops, device, requires_grad):
    for x, weight, bias, message in bad_calls(device):
        x = x.clone().requires_grad_(requires_grad)
        with pytest.raises(ValueError) as raised:
            ops.causal_conv1d(x, weight, bias)
        assert str(raised.value) == message
    y = ops.causal_conv1d(torch.ones(2, 4, 10, device=device), [1.0] * 8, [3.0] * 4)
    np.testing.assert_array_equal(y[0, 0].cpu().numpy(), [4.0] + [5.0] * 9)


@pytest.mark.parametrize("device", DEVICES)
def test_the_kernels_refuse_each_table_in_the_same_words(ops, device):
    """The C++ kernels of both schemas name each table as the functions do; the refusal found
    again in Python (for releases that turn a kernel's exception into a RuntimeError) is the
    kernel's own."""
    import constmem.torch as cm

    spec = ops.OPS["causal_conv1d"]
    for x, weight, bias, message in bad_calls(device):
        tensors = all(isinstance(t, torch.Tensor) for t in (weight, bias))
        if tensors and "meta" not in message:
            with pytest.raises((ValueError, RuntimeError)) as raised:
                with torch._C._AutoDispatchBelowAutograd():
                    torch.ops.example.causal_conv1d.default(x, weight, bias)
            assert str(raised.value) == message
            refusal = cm._refusal(spec, x, (weight, bias), ())
            assert isinstance(refusal, ValueError) and str(refusal) == message
    x = torch.ones(2, 4, 10, device=device)
    for weight, bias, message in [
        ([1.0] * 12, [1.0] * 3, "bias must have one entry per channel (4); got 3"),
        ([1.0] * 13, [1.0] * 4, "weight must have the same number of taps for each of the 4 "
         "channels; got 13 entries"),
        ([1.0] * 12, [], "bias must have 1 to 65536 entries; got 0"),
        ([], [1.0] * 4, "weight must have 1 to 1048576 entries; got 0"),
    ]:  # fmt: skip
        with pytest.raises(ValueError) as raised:
            torch.ops.example.causal_conv1d_static.default(x, weight, bias)
        assert str(raised.value) == message
        refusal = cm._refusal(spec, x, (weight, bias), ())
        assert isinstance(refusal, ValueError) and str(refusal) == message
    good = (torch.ones(12, device=device), [1.0] * 4)
    assert cm._refusal(spec, x, good, ()) is None


def test_a_static_table_is_checked_under_each_tables_rule(ops):
    """Equal lists given as weight and as bias are cached apart: each is checked by its own rule."""
    import constmem.torch as cm

    ones = [1.0] * 4
    y = ops.causal_conv1d(torch.ones(1, 4, 2), ones, ones)
    np.testing.assert_array_equal(y.numpy(), np.full((1, 4, 2), 2.0))
    names = {key[0] for key in cm._static_cache if key[2:] == (tuple(ones),)}
    assert {"causal_conv1d.weight", "causal_conv1d.bias"} <= names, names
    taps = [0.5] * 65537
    y = ops.causal_conv1d(torch.ones(1, 1, 3), taps, [1.0])
    np.testing.assert_array_equal(y.numpy(), [[[1.5, 2.0, 2.5]]])
    with pytest.raises(ValueError) as raised:
        ops.causal_conv1d(torch.ones(1, 65537, 1), [1.0] * 65537, taps)
    assert str(raised.value) == "bias must have 1 to 65536 entries; got 65537"


@pytest.mark.skipif(torch.cuda.device_count() == 0, reason="needs a CUDA device")
def test_cpu_data_with_a_cuda_table_is_refused(ops):
    x = torch.ones(2, 4, 10)
    with pytest.raises(ValueError) as raised:
        ops.causal_conv1d(x, torch.ones(12), torch.ones(4, device="cuda:0"))
    assert str(raised.value) == (
        "bias must be on the CPU or on x's device (cpu); got a tensor on cuda:0"
    )


def built_with_cuda():
    """Whether the library holds CUDA code: the fat binary nvcc links into it."""
    with open(f"{BUILD}/_causal_conv1d_torch.so", "rb") as library:
        return b".nv_fatbin" in library.read()


def test_placement_of_answers_for_each_table(ops):
    """Where a launch would put each table, by its own rule, asked with no GPU: None for a library
    built without GPU kernels."""
    check_placement_of(ops, built_with_cuda())


# Run by two gloo processes: the op's DTensor strategies come from its description's axes alone.
DTENSOR_CHECK = """
import os

import torch
import torch.distributed as dist
from causal_conv1d_ops import random_case
from causal_conv1d_ops import torch as causal_conv1d
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Replicate, Shard, distribute_tensor

dist.init_process_group("gloo")
mesh = init_device_mesh("cpu", (2,))
ops = causal_conv1d()
inputs = [torch.from_numpy(a).requires_grad_() for a in random_case((4, 6, 32), 3, seed=7)]
expected = ops.causal_conv1d(*inputs)
cotangent = torch.randn(expected.shape, generator=torch.Generator().manual_seed(1))
grads = torch.autograd.grad(expected, inputs, cotangent)
# Rows and channels stay split (the weight and bias split with the channels); samples gather.
for axis, kept in [(0, Shard(0)), (1, Shard(1)), (2, Replicate())]:
    placements = [[Shard(axis)], [Replicate()], [Replicate()]]
    given = [
        distribute_tensor(t.detach(), mesh, p).requires_grad_()
        for t, p in zip(inputs, placements)
    ]
    y = ops.causal_conv1d(*given)
    assert y.placements == (kept,), (axis, y.placements)
    assert torch.equal(y.full_tensor(), expected), axis
    found = torch.autograd.grad(y, given, distribute_tensor(cotangent, mesh, y.placements))
    assert torch.equal(found[0].full_tensor(), grads[0]), axis
    for g, want in zip(found[1:], grads[1:]):  # sums over the shards, in another order
        torch.testing.assert_close(g.full_tensor(), want, rtol=1e-4, atol=1e-5)
print("DTENSOR PASS", flush=True)
# Both ranks done before either leaves; then out at once: a thread left at the interpreter's
# teardown (1 exit in 6 on 2 cores) aborts it after the check has passed.
dist.barrier()
dist.destroy_process_group()
os._exit(0)
"""


def test_dtensor_shards_from_the_description_alone():
    import os
    import socket
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), MASTER_ADDR="127.0.0.1")
    env.update(MASTER_PORT=str(port), WORLD_SIZE="2", OMP_NUM_THREADS="1")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", DTENSOR_CHECK],
            env=dict(env, RANK=str(rank)),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for rank in range(2)
    ]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    for p, out in zip(procs, outputs, strict=True):
        assert p.returncode == 0 and "DTENSOR PASS" in out, out[-3000:]
