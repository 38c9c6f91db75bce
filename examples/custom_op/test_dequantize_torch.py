# SPDX-License-Identifier: Apache-2.0
"""Dequantize (uint8 codes, an output dtype of its own) in PyTorch: each output dtype against NumPy
in float32 rounded by torch, on the CPU and every GPU, each table form; bitsandbytes'
dequantize_4bit where it is installed; gradients to the codebook and to absmax; torch.compile,
CUDA graphs, and bad input naming the argument."""

import importlib.util

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from dequantize_ops import NF4, random_case, reference  # noqa: E402
from dequantize_ops import torch as dequantize  # noqa: E402

DEVICES = ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]
DTYPES = [torch.bfloat16, torch.float16, torch.float32]


@pytest.fixture(scope="module")
def ops():
    return dequantize()


def expected(codes, codebook, absmax, block, dtype, device):
    return torch.from_numpy(reference(codes, codebook, absmax, block)).to(device).to(dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("shape", "block"), [((4096,), 64), ((3, 37), 7), ((2, 5, 128), 256)])
def test_each_output_dtype_equals_the_float32_product_rounded_once(
    ops, device, dtype, shape, block
):
    codes, codebook, absmax = random_case(shape, block, seed=sum(shape) + block)
    for form in ("device", "cpu", "list"):
        tables = [torch.from_numpy(codebook), torch.from_numpy(absmax)]
        if form == "device":
            tables = [t.to(device) for t in tables]
        elif form == "list":
            tables = [t.tolist() for t in tables]
        y = ops.dequantize(torch.from_numpy(codes).to(device), *tables, block=block, dtype=dtype)
        assert y.dtype == dtype and y.shape == (*shape[:-1], 2 * shape[-1])
        assert torch.equal(y, expected(codes, codebook, absmax, block, dtype, device)), form


def test_the_dtype_defaults_to_bfloat16_and_takes_names(ops):
    codes, codebook, absmax = random_case((64,), 64, seed=1)
    x = torch.from_numpy(codes)
    assert ops.dequantize(x, codebook, absmax).dtype == torch.bfloat16
    assert ops.dequantize(x, codebook, absmax, dtype="float16").dtype == torch.float16


@pytest.mark.skipif(importlib.util.find_spec("bitsandbytes") is None, reason="no bitsandbytes")
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_equals_bitsandbytes_dequantize_4bit(ops, device, dtype):
    import bitsandbytes.functional as bnbf

    weight = torch.randn(256, 192, device=device, dtype=dtype)
    packed, state = bnbf.quantize_4bit(weight, blocksize=64, quant_type="nf4")
    theirs = bnbf.dequantize_4bit(packed, state)
    codebook = bnbf.get_4bit_type("nf4", device=device).float()
    ours = ops.dequantize(packed.reshape(-1), codebook, state.absmax.float(), block=64, dtype=dtype)
    assert torch.equal(ours.reshape(theirs.shape), theirs)


def test_nf4_is_bitsandbytes_codebook():
    bnbf = pytest.importorskip("bitsandbytes.functional")
    assert np.array_equal(bnbf.get_4bit_type("nf4", device="cpu").float().numpy(), NF4)


@pytest.mark.parametrize("device", DEVICES)
def test_gradients_flow_to_the_codebook_and_absmax(ops, device):
    codes, codebook, absmax = random_case((3, 40), 16, seed=4)
    x = torch.from_numpy(codes).to(device)
    cb = torch.from_numpy(codebook).to(device).requires_grad_()
    am = torch.from_numpy(absmax).to(device).requires_grad_()
    y = ops.dequantize(x, cb, am, block=16, dtype=torch.float32)
    grad = torch.randn_like(y)
    g_cb, g_am = torch.autograd.grad(y, (cb, am), grad)
    # The same by PyTorch's own autograd of the definition.
    flat = x.reshape(-1).long()
    levels = torch.stack([flat >> 4, flat & 15], -1).reshape(-1)
    cb2, am2 = cb.detach().clone().requires_grad_(), am.detach().clone().requires_grad_()
    y2 = (cb2[levels] * am2[torch.arange(levels.numel(), device=device) // 16]).reshape(y.shape)
    r_cb, r_am = torch.autograd.grad(y2, (cb2, am2), grad)
    torch.testing.assert_close(g_cb, r_cb, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(g_am, r_am, rtol=1e-5, atol=1e-5)
    assert g_cb.abs().sum() > 0 and g_am.abs().sum() > 0


@pytest.mark.parametrize("device", DEVICES)
def test_compiled_and_captured(ops, device):
    codes, codebook, absmax = random_case((2, 512), 64, seed=5)
    x = torch.from_numpy(codes).to(device)
    cb, am = torch.from_numpy(codebook).to(device), torch.from_numpy(absmax).to(device)
    want = ops.dequantize(x, cb, am)
    compiled = torch.compile(lambda x: ops.dequantize(x, cb, am) * 2, fullgraph=True)
    assert torch.equal(compiled(x), want * 2)
    if device == "cpu":
        return
    modes = torch.compile(lambda x: ops.dequantize(x, cb, am) + 1, mode="reduce-overhead")
    for _ in range(3):  # recorded into a CUDA graph, then replayed
        assert torch.equal(modes(x), want + 1)
    graph, out = torch.cuda.CUDAGraph(), None
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        ops.dequantize(x, cb, am)  # warm: the library's first call outside the capture
        with torch.cuda.graph(graph):
            out = ops.dequantize(x, cb, am)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, want)


def test_bad_input_names_the_argument(ops):
    codes, codebook, absmax = random_case((64,), 64, seed=6)
    x = torch.from_numpy(codes)
    with pytest.raises(ValueError, match="dtype must be bfloat16, float16 or float32; got int8"):
        ops.dequantize(x, codebook, absmax, dtype=torch.int8)
    with pytest.raises(ValueError, match="codes must be uint8; got float32"):
        ops.dequantize(x.float(), codebook, absmax)
    with pytest.raises(
        ValueError, match=r"absmax must have one entry per block of 64 outputs \(2\)"
    ):
        ops.dequantize(x, codebook, absmax[:1])
    with pytest.raises(ValueError, match="codebook must have exactly 16 entries; got 15"):
        ops.dequantize(x, codebook[:15], absmax)
    with pytest.raises(ValueError, match="block must be 1 to 2"):
        ops.dequantize(x, codebook, absmax, block=0)
    assert ops.dequantize(x, codebook, absmax).shape == (128,)  # the next call is right
