# SPDX-License-Identifier: Apache-2.0
"""constmem.torch.transforms against torchvision's and torchaudio's definitions: the same sigma
drawn from torch's generator under the same seed, the samples' structure kept, torchvision's and
torchaudio's own modules where they are installed."""

import importlib.util

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import constmem.torch as cm  # noqa: E402
from constmem.torch.transforms import GaussianBlur, Resample  # noqa: E402

DEVICES = ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]
HAS_TORCHVISION = importlib.util.find_spec("torchvision") is not None
HAS_TORCHAUDIO = importlib.util.find_spec("torchaudio") is not None


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


def test_gaussian_blur_draws_torchvisions_sigma_from_the_same_seed(device):
    images = torch.rand(4, 3, 20, 24, device=device)
    blur = GaussianBlur(5, sigma=(0.5, 3.0))
    torch.manual_seed(7)
    out = blur(images)
    torch.manual_seed(7)
    # torchvision.transforms.v2.GaussianBlur.make_params: one uniform draw a call.
    sigma = torch.empty(1).uniform_(0.5, 3.0).item()
    expected = cm.gaussian_blur(images, [5, 5], [sigma, sigma])
    torch.testing.assert_close(out, expected, rtol=0, atol=0)
    assert out.shape == images.shape and out.device == images.device


def test_a_fixed_sigma_and_two_kernel_sizes(device):
    images = torch.rand(2, 3, 16, 16, device=device, dtype=torch.float64)
    out = GaussianBlur((3, 7), sigma=1.5)(images)
    torch.testing.assert_close(out, cm.gaussian_blur(images, [3, 7], [1.5, 1.5]), rtol=0, atol=0)


def test_a_sample_keeps_its_structure_and_passes_the_rest_through():
    images = torch.rand(2, 3, 12, 12)
    boxes = torch.tensor([[1.0, 2.0, 5.0, 6.0]])
    sample = {"image": images, "boxes": boxes, "label": 3, "name": "x"}
    torch.manual_seed(1)
    out = GaussianBlur(3, sigma=(1.0, 1.0))(sample)
    assert set(out) == set(sample) and out["label"] == 3 and out["name"] == "x"
    torch.testing.assert_close(out["image"], cm.gaussian_blur(images, 3, 1.0), rtol=0, atol=0)
    if not HAS_TORCHVISION:  # only the first plain tensor is an image, as torchvision's rule
        assert out["boxes"] is boxes
    image, label = GaussianBlur(3, sigma=1.0)(images, 5)  # several inputs: a tuple back
    assert label == 5 and image.shape == images.shape


def test_one_sigma_an_image_in_one_call(device):
    images = torch.rand(5, 3, 14, 18, device=device)
    torch.manual_seed(3)
    out = GaussianBlur(7, sigma=(0.3, 2.5), per_image=True)(images)
    torch.manual_seed(3)
    sigmas = torch.empty(5).uniform_(0.3, 2.5).tolist()
    for b, sigma in enumerate(sigmas):
        expected = cm.gaussian_blur(images[b : b + 1], 7, [sigma, sigma])
        torch.testing.assert_close(out[b : b + 1], expected, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kernel_size": 4}, "odd and positive"),
        ({"kernel_size": (3, -1)}, "odd and positive"),
        ({"kernel_size": "9"}, "kernel_size"),
        ({"kernel_size": 3, "sigma": 0.0}, "sigma should be positive"),
        ({"kernel_size": 3, "sigma": (2.0, 1.0)}, "(min, max)"),
        ({"kernel_size": 3, "sigma": (1.0, 2.0, 3.0)}, "sigma should be"),
    ],
)
def test_gaussian_blur_refuses_what_torchvision_refuses(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        GaussianBlur(**kwargs)


def test_resample_module_is_the_function(device):
    waveform = torch.randn(2, 4410, device=device)
    module = Resample(44100, 16000)
    torch.testing.assert_close(
        module(waveform), cm.resample(waveform, 44100, 16000), rtol=0, atol=0
    )
    assert Resample(16000, 16000)(waveform) is waveform
    with pytest.raises(ValueError, match="rolloff"):
        Resample(44100, 16000, rolloff=0.0)


@pytest.mark.skipif(not HAS_TORCHVISION, reason="torchvision is not installed")
def test_against_torchvisions_module_with_tv_tensors(device):
    from torchvision import tv_tensors
    from torchvision.transforms import v2

    images = tv_tensors.Image(torch.rand(4, 3, 32, 40, device=device))
    boxes = tv_tensors.BoundingBoxes(
        torch.tensor([[1, 2, 10, 12]]), format="XYXY", canvas_size=(32, 40)
    )
    sample = {"image": images, "boxes": boxes, "label": 1}
    torch.manual_seed(11)
    ours = GaussianBlur(9, sigma=(0.1, 2.0))(sample)
    torch.manual_seed(11)
    theirs = v2.GaussianBlur(9, sigma=(0.1, 2.0))(sample)
    assert type(ours["image"]) is tv_tensors.Image
    assert ours["boxes"] is boxes and ours["label"] == 1
    np.testing.assert_allclose(
        ours["image"].cpu().numpy(), theirs["image"].cpu().numpy(), rtol=0, atol=1e-5
    )


@pytest.mark.skipif(not HAS_TORCHAUDIO, reason="torchaudio is not installed")
def test_against_torchaudios_module(device):
    import torchaudio

    waveform = torch.randn(2, 48000, device=device, dtype=torch.float64)
    ours = Resample(48000, 44100)(waveform)
    theirs = torchaudio.transforms.Resample(48000, 44100, dtype=torch.float64).to(device)(waveform)
    np.testing.assert_allclose(ours.cpu().numpy(), theirs.cpu().numpy(), rtol=0, atol=1e-12)


def test_float16_channels_last_images_through_the_module(device):
    images = torch.rand(2, 3, 16, 20, device=device).half()
    images = images.contiguous(memory_format=torch.channels_last)
    torch.manual_seed(5)
    out = GaussianBlur(5, sigma=(0.5, 2.0), per_image=True)(images)
    assert out.dtype == torch.float16 and out.is_contiguous(memory_format=torch.channels_last)
    torch.manual_seed(5)
    for b, sigma in enumerate(torch.empty(2).uniform_(0.5, 2.0).tolist()):
        expected = cm.gaussian_blur(images[b : b + 1].float(), 5, [sigma, sigma])
        # float32 blurs, each rounded once to float16 (half a step in [1/2, 1) is 2^-12).
        torch.testing.assert_close(out[b : b + 1].float(), expected, rtol=0, atol=2**-11)


@pytest.mark.skipif(not HAS_TORCHVISION, reason="torchvision is not installed")
def test_float16_and_channels_last_against_torchvision(device):
    from torchvision.transforms.v2 import functional

    images = torch.rand(2, 3, 20, 24, device=device).half()
    images = images.contiguous(memory_format=torch.channels_last)
    ours = cm.gaussian_blur(images, 7, 1.5)
    theirs = functional.gaussian_blur(images.float(), [7, 7], [1.5, 1.5])
    assert ours.dtype == torch.float16 and ours.is_contiguous(memory_format=torch.channels_last)
    np.testing.assert_allclose(
        ours.float().cpu().numpy(), theirs.cpu().numpy(), rtol=0, atol=2**-12 + 1e-5
    )


@pytest.mark.skipif(not HAS_TORCHAUDIO, reason="torchaudio is not installed")
def test_bfloat16_against_torchaudio(device):
    import torchaudio

    waveform = (0.5 * torch.randn(2, 4800, device=device)).to(torch.bfloat16)
    ours = Resample(48000, 44100)(waveform)
    theirs = torchaudio.functional.resample(
        waveform=waveform.double(), orig_freq=48000, new_freq=44100
    )
    assert ours.dtype == torch.bfloat16
    # One rounding to bfloat16: half a step of values below 4 is at most 2^-7.
    np.testing.assert_allclose(
        ours.double().cpu().numpy(), theirs.cpu().numpy(), rtol=0, atol=2**-7 + 1e-6
    )
