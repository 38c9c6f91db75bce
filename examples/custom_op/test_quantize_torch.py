# SPDX-License-Identifier: Apache-2.0
"""Quantize (two outputs: uint8 codes and float32 absmax) in PyTorch: both outputs against NumPy's
bitsandbytes-exact reference on the CPU and every GPU, each codebook form and data dtype; the
round trip through Dequantize; bitsandbytes' quantize_4bit where it is installed; absmax's
gradient; the fake kernel, torch.compile, and bad input naming the argument."""

import importlib.util

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from dequantize_ops import NF4  # noqa: E402
from dequantize_ops import reference as dequantize_reference  # noqa: E402
from dequantize_ops import torch as dequantize  # noqa: E402
from quantize_ops import FP4, random_case, reference  # noqa: E402
from quantize_ops import torch as quantize  # noqa: E402

DEVICES = ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# Whole blocks, a partial last block, an odd block (a byte straddles two blocks), one block.
CASES = [((4096,), 64), ((3, 130), 64), ((5, 38), 7), ((2, 6, 64), 4096)]


@pytest.fixture(scope="module")
def ops():
    return quantize()


def as_numpy(x):
    return x.float().cpu().numpy()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("shape", "block"), CASES)
def test_codes_and_absmax_equal_the_reference(ops, device, dtype, shape, block):
    x = torch.from_numpy(random_case(shape, seed=sum(shape) + block)).to(device, dtype)
    for codebook in (NF4, FP4):
        want_codes, want_absmax = reference(as_numpy(x), codebook, block)
        for form in (torch.from_numpy(codebook).to(device), torch.from_numpy(codebook), codebook):
            codes, absmax = ops.quantize(x, form, block=block)
            assert codes.dtype == torch.uint8 and codes.shape == (*shape[:-1], shape[-1] // 2)
            assert absmax.dtype == torch.float32 and absmax.shape == (-(-x.numel() // block),)
            assert codes.device == x.device and absmax.device == x.device
            np.testing.assert_array_equal(codes.cpu().numpy(), want_codes)
            np.testing.assert_array_equal(absmax.cpu().numpy(), want_absmax)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("shape", "block"), CASES)
def test_dequantize_reads_back_each_element_as_its_nearest_level(ops, device, shape, block):
    x = torch.from_numpy(random_case(shape, seed=7)).to(device)
    codes, absmax = ops.quantize(x, NF4, block=block)
    y = dequantize().dequantize(codes, NF4, absmax, block=block, dtype=torch.float32)
    want = dequantize_reference(codes.cpu().numpy(), NF4, absmax.cpu().numpy(), block)
    np.testing.assert_array_equal(y.cpu().numpy(), want)
    # Each element within half the widest gap between NF4's levels of its block's scale.
    scale = absmax.cpu().numpy()[np.arange(x.numel()) // block].reshape(shape)
    error = np.abs(y.cpu().numpy() - x.cpu().numpy())
    assert np.all(error <= scale * np.max(np.diff(NF4)) / 2 * (1 + 1e-6))


@pytest.mark.skipif(importlib.util.find_spec("bitsandbytes") is None, reason="no bitsandbytes")
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("quant_type", ["nf4", "fp4"])
def test_equals_bitsandbytes_quantize_4bit(ops, device, dtype, quant_type):
    """On every device, bitsandbytes' CPU quantize_4bit: the definition the op follows (its CUDA
    kernel decides a level's midpoint by constants of its own, FP4's zeros by the sign)."""
    import bitsandbytes.functional as bnbf

    for shape, block in (((256, 192), 64), ((7, 34), 32), ((3, 1000), 128)):
        weight = torch.from_numpy(random_case(shape, seed=3)).to(dtype)
        packed, state = bnbf.quantize_4bit(weight, blocksize=block, quant_type=quant_type)
        codebook = bnbf.get_4bit_type(quant_type, device="cpu").float()
        codes, absmax = ops.quantize(weight.to(device), codebook.to(device), block=block)
        assert torch.equal(codes.cpu().reshape(-1), packed.reshape(-1))
        assert torch.equal(absmax.cpu(), state.absmax)


def test_fp4_is_bitsandbytes_codebook():
    bnbf = pytest.importorskip("bitsandbytes.functional")
    assert np.array_equal(bnbf.get_4bit_type("fp4", device="cpu").float().numpy(), FP4)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_absmax_gradient_is_that_of_amax_and_codes_take_none(ops, device, dtype):
    block = 8
    x = torch.from_numpy(random_case((3, 20), seed=9)).to(device, dtype)
    x[0, 2] = -x[0, :8].abs().max()  # a tie within the first block
    x = x.requires_grad_()
    codes, absmax = ops.quantize(x, torch.from_numpy(NF4).to(device), block=block)
    assert not codes.requires_grad and absmax.requires_grad
    grad = torch.randn_like(absmax)
    (g,) = torch.autograd.grad(absmax, x, grad)
    # PyTorch's own: amax of |x| over each block (ties share equally), the partial one padded.
    x2 = x.detach().float().requires_grad_()
    padded = torch.nn.functional.pad(x2.reshape(-1).abs(), (0, 4))
    (want,) = torch.autograd.grad(padded.reshape(-1, block).amax(1), x2, grad)
    assert g.dtype == dtype
    torch.testing.assert_close(g.float(), want.to(dtype).float())
    assert g.abs().sum() > 0


def test_fake_kernel_gives_each_output_shape_and_dtype(ops):
    x = torch.empty(6, 10, device="meta", dtype=torch.bfloat16)
    codes, absmax = torch.ops.example.quantize(x, torch.from_numpy(NF4), 16)
    assert codes.shape == (6, 5) and codes.dtype == torch.uint8 and codes.device.type == "meta"
    assert absmax.shape == (4,) and absmax.dtype == torch.float32


@pytest.mark.parametrize("device", DEVICES)
def test_compiled_with_fullgraph(ops, device):
    x = torch.from_numpy(random_case((4, 256), seed=5)).to(device)
    codebook = torch.from_numpy(NF4).to(device)
    want_codes, want_absmax = ops.quantize(x, codebook)

    def both(x):
        codes, absmax = ops.quantize(x, codebook)
        return codes, absmax * 2

    codes, absmax = torch.compile(both, fullgraph=True)(x)
    assert torch.equal(codes, want_codes) and torch.equal(absmax, want_absmax * 2)
    dynamic = torch.compile(both, fullgraph=True, dynamic=True)
    for rows in (3, 5):
        y = torch.from_numpy(random_case((rows, 96), seed=rows)).to(device)
        codes, absmax = dynamic(y)
        want = reference(y.cpu().numpy(), NF4, 64)
        np.testing.assert_array_equal(codes.cpu().numpy(), want[0])
        np.testing.assert_array_equal((absmax / 2).cpu().numpy(), want[1])


def test_bad_input_names_the_argument(ops):
    x = torch.from_numpy(random_case((4, 64), seed=6))
    with pytest.raises(ValueError, match="x must be float32, float16 or bfloat16; got float64"):
        ops.quantize(x.double(), NF4)
    odd = r"x's last dimension must be even \(two codes a byte\); got 63"
    with pytest.raises(ValueError, match=odd):
        ops.quantize(x[:, :63], NF4)
    with pytest.raises(ValueError, match="x must have rank 1 or more; got a scalar"):
        ops.quantize(x[0, 0], NF4)
    with pytest.raises(ValueError, match="codebook must have exactly 16 entries; got 15"):
        ops.quantize(x, NF4[:15])
    with pytest.raises(ValueError, match="codebook must be float32; got float64"):
        ops.quantize(x, torch.from_numpy(NF4).double())
    with pytest.raises(ValueError, match="block must be 1 to 2"):
        ops.quantize(x, NF4, block=0)
    codes, absmax = ops.quantize(x, NF4)  # the next call is right
    assert codes.shape == (4, 32) and absmax.shape == (4,)
