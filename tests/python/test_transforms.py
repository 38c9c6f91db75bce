# SPDX-License-Identifier: Apache-2.0
"""constmem.torch.transforms against torchvision's and torchaudio's definitions: the same sigma
drawn from torch's generator under the same seed, the samples' structure kept, torchvision's and
torchaudio's own modules where they are installed."""

import importlib.util
import inspect
import itertools
import math
import pickle
import re

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
    ("kwargs", "error", "message"),
    [
        ({"kernel_size": 4}, ValueError, "Kernel size value should be an odd and positive number"),
        ({"kernel_size": (3, -1)}, ValueError, "odd and positive number. Got (3, -1)"),
        ({"kernel_size": [10, 12, 14]}, ValueError, "tuple/list of two integers. Got [10, 12, 14]"),
        ({"kernel_size": "9"}, TypeError, "kernel_size must be an odd positive integer"),
        ({"kernel_size": 3.0}, TypeError, "got 3.0 (float)"),
        ({"kernel_size": 3, "sigma": 0.0}, ValueError, "positive and of the form (min, max)"),
        ({"kernel_size": 3, "sigma": -1.0}, ValueError, "positive and of the form (min, max)"),
        ({"kernel_size": 3, "sigma": (2.0, 1.0)}, ValueError, "(min, max). Got (2.0, 1.0)"),
        ({"kernel_size": 3, "sigma": (1.0, 2.0, 3.0)}, ValueError, "2. Got 3: (1.0, 2.0, 3.0)"),
        ({"kernel_size": 3, "sigma": {}}, TypeError, "sigma should be a number or a sequence"),
        ({"kernel_size": 3, "sigma": "1.0"}, TypeError, "got '1.0' (str)"),
        ({"kernel_size": 3, "sigma": True}, TypeError, "got True (bool)"),
    ],
)
def test_gaussian_blur_refuses_what_torchvision_refuses(kwargs, error, message):
    with pytest.raises(error, match=re.escape(message)):
        GaussianBlur(**kwargs)


@pytest.mark.parametrize("sigma", [10.0, 10, [10], (10.0,), [10.0, 12.0], (10, 12.0)])
def test_gaussian_blur_takes_torchvisions_sigmas(sigma):
    """A number or a sequence of one is fixed, two are (min, max): torchvision's make_params."""
    low, high = (sigma, sigma) if isinstance(sigma, (int, float)) else (sigma[0], sigma[-1])
    params = GaussianBlur(3, sigma=sigma).make_params([])
    assert low <= params["sigma"][0] == params["sigma"][1] <= high
    assert GaussianBlur([5], sigma=sigma).kernel_size == (5, 5)


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


def test_functional_signature_reads_as_torchvisions():
    """The image, kernel_size and sigma as torchvision's signature has them (no sentinel
    defaults), then constmem's own; the other names of the image are still taken."""
    parameters = inspect.signature(cm.gaussian_blur).parameters
    assert list(parameters)[:3] == ["images", "kernel_size", "sigma"]
    assert parameters["kernel_size"].default is inspect.Parameter.empty
    assert parameters["sigma"].default is None
    if HAS_TORCHVISION:
        from torchvision.transforms.v2 import functional

        theirs = list(inspect.signature(functional.gaussian_blur_image).parameters.values())
        assert list(parameters.values())[1:3] == theirs[1:3]
    images = torch.rand(3, 8, 9)
    expected = cm.gaussian_blur(images, 3)
    for name in ("inpt", "img"):
        torch.testing.assert_close(cm.gaussian_blur(**{name: images}, kernel_size=3), expected)
    # resample's rates as torchaudio's: required, no sentinel shown.
    parameters = inspect.signature(cm.resample).parameters
    assert [parameters[n].default for n in ("x", "orig_freq", "new_freq")] == [
        inspect.Parameter.empty
    ] * 3
    assert parameters["lowpass_filter_width"].default == 6 and parameters["beta"].default is None


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda x: cm.gaussian_blur(x, 9, "2.0"), TypeError, "sigma should be either float"),
        (lambda x: cm.gaussian_blur(x, 9, "2.0"), TypeError, "Got '2.0' (str)"),
        (lambda x: cm.gaussian_blur(x, 9, "sigma_string"), TypeError, "'sigma_string' (str)"),
        (lambda x: cm.gaussian_blur(x, 9, True), TypeError, "Got True (bool)"),
        (lambda x: cm.gaussian_blur(x, 9, object()), TypeError, "sigma should be either float"),
        (lambda x: cm.gaussian_blur(x, 9, [1.0, "2"]), TypeError, "Got [1.0, '2'] (list)"),
        (lambda x: cm.gaussian_blur(x, 9, [1.0, 2.0, 3.0]), ValueError, "length should be 2"),
        (lambda x: cm.gaussian_blur(x, 9, -1.0), ValueError, "positive values. Got -1.0"),
        (lambda x: cm.gaussian_blur(x, 9, [1.0, 0.0]), ValueError, "Got [1.0, 0.0]"),
        (lambda x: cm.gaussian_blur(x, [3]), ValueError, "length should be 2 (kx, ky). Got 1"),
        (lambda x: cm.gaussian_blur(x, [1, 2, 3]), ValueError, "length should be 2"),
        (lambda x: cm.gaussian_blur(x, 2), ValueError, "odd and positive integers. Got 2"),
        (lambda x: cm.gaussian_blur(x, -1), ValueError, "odd and positive integers. Got -1"),
        (lambda x: cm.gaussian_blur(x, "9"), TypeError, "got '9' (str)"),
        (lambda x: cm.gaussian_blur(x, 9.0), TypeError, "got 9.0 (float)"),
        (lambda x: cm.gaussian_blur(x, True), TypeError, "got True (bool)"),
        (lambda x: cm.gaussian_blur(x, (3, "5")), TypeError, "got (3, '5') (tuple)"),
        (lambda x: cm.gaussian_blur(object(), 3), TypeError, str(object)),
        (lambda x: cm.gaussian_blur(x.numpy(), 3), TypeError, "got <class 'numpy.ndarray'>"),
        (lambda x: cm.resample(x, "44100", 16000), TypeError, "orig_freq must be a number"),
        (lambda x: cm.resample(x, 44100, "16000"), TypeError, "got '16000' (str)"),
        (lambda x: cm.resample(x, True, 16000), TypeError, "orig_freq must be a number; got True"),
        (lambda x: cm.resample(x, math.inf, 16000), ValueError, "orig_freq must be a positive"),
        (lambda x: cm.resample(x, math.nan, 16000), ValueError, "got nan"),
        (lambda x: cm.resample(x, 16000, 0), ValueError, "new_freq must be a positive"),
        (lambda x: cm.resample(x, -1, 16000), ValueError, "got -1"),
        (lambda x: cm.resample(x, 44100.5, 16000), ValueError, "got 44100.5"),
        (lambda x: cm.resample(x, 3, 2, rolloff="high"), TypeError, "rolloff must be a number"),
        (lambda x: cm.resample(x, 3, 2, resampling_method="x"), ValueError, "got 'x'"),
        (lambda x: cm.resample(x[0, 0, 0, 0], 3, 2), ValueError, "x must have rank 1 or more"),
        (
            lambda x: cm.resample(waveform=x[0, 0, 0, 0], orig_freq=3, new_freq=2),
            ValueError,
            "waveform must have rank 1 or more",
        ),
        (lambda x: cm.resample(x[0, 0, 0, 0], 3, 3), ValueError, "got rank 0"),
        (lambda x: cm.resample_poly(x[0, 0, 0, 0], 3, 2), ValueError, "x must have rank 1 or more"),
        (lambda x: cm.resample_poly(x, 0, 2), ValueError, "up must be a positive integer"),
    ],
)
def test_bad_arguments_are_named_with_their_values(call, error, message):
    """TypeError for a wrong type, ValueError for a bad value, as torchvision and torchaudio
    raise them; each message names the argument and shows what it was."""
    with pytest.raises(error, match=re.escape(message)):
        call(torch.rand(2, 3, 16, 16))


def test_functional_keeps_tv_tensors_and_refuses_the_others():
    tv_tensors = pytest.importorskip("torchvision.tv_tensors")
    images = torch.rand(2, 3, 16, 16)
    expected = cm.gaussian_blur(images, 5, 1.5)
    for kind in (tv_tensors.Image, tv_tensors.Video):
        out = cm.gaussian_blur(kind(images), 5, 1.5)
        assert type(out) is kind
        torch.testing.assert_close(out.as_subclass(torch.Tensor), expected, rtol=0, atol=0)
    sigmas = torch.tensor([[1.0, 2.0], [0.5, 0.7]])
    assert type(cm.gaussian_blur(tv_tensors.Image(images), 5, sigmas)) is tv_tensors.Image
    boxes = tv_tensors.BoundingBoxes([[1, 2, 5, 6]], format="XYXY", canvas_size=(16, 16))
    with pytest.raises(TypeError, match="tv_tensors Image and Video"):
        cm.gaussian_blur(boxes, 5)


@pytest.mark.skipif(not HAS_TORCHVISION, reason="torchvision is not installed")
@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("mode", ["RGB", "L", "RGBA", "F"])
def test_pil_images_are_blurred_as_torchvision_blurs_them(mode):
    import PIL.Image
    from torchvision.transforms import v2
    from torchvision.transforms.v2 import functional

    pixels = np.random.default_rng(41).integers(0, 256, (21, 18, 4), dtype=np.uint8)
    image = PIL.Image.fromarray(pixels, "RGBA").convert(mode)
    for sizes, sigma in ((5, 1.5), ([3, 7], [0.8, 2.0]), ((9, 9), None)):
        ours = cm.gaussian_blur(image, sizes, sigma)
        theirs = functional.gaussian_blur(image, sizes if sizes != 5 else [5, 5], sigma)
        assert isinstance(ours, PIL.Image.Image)
        assert (ours.mode, ours.size) == (theirs.mode, theirs.size)
        # uint8 modes: torchvision's 2-D convolution and the separable one round alike but at
        # a half; a float32 mode (values to 255) within float32 rounding.
        difference = np.abs(np.asarray(ours, np.float64) - np.asarray(theirs, np.float64))
        assert difference.max() <= (1 if mode != "F" else 1e-3)
        assert difference.mean() <= (0.01 if mode != "F" else 1e-4)
    torch.manual_seed(3)
    ours = GaussianBlur(5, sigma=(0.5, 2.0))({"image": image, "label": 3})
    torch.manual_seed(3)
    theirs = v2.GaussianBlur(5, sigma=(0.5, 2.0))({"image": image, "label": 3})
    assert isinstance(ours["image"], PIL.Image.Image) and ours["label"] == 3
    assert np.abs(np.asarray(ours["image"], np.float64) - np.asarray(theirs["image"])).max() <= 1
    with pytest.raises(ValueError, match="mode 'I;16'"):
        cm.gaussian_blur(PIL.Image.new("I;16", (8, 8)), 3)


@pytest.mark.skipif(not HAS_TORCHVISION, reason="torchvision is not installed")
def test_transform_blurs_what_torchvisions_blurs_in_a_sample():
    """tv_tensors Image and Video and PIL images; a plain tensor only where none of them is in
    the sample; the rest (boxes, masks, numbers, strings) returned as they are."""
    import PIL.Image
    from torchvision import tv_tensors
    from torchvision.transforms import v2

    image = tv_tensors.Image(torch.rand(3, 12, 14))
    pil = PIL.Image.new("RGB", (14, 12), (10, 200, 30))
    plain = torch.rand(3, 12, 14)
    mask = tv_tensors.Mask(torch.zeros(12, 14))
    for sample in (
        [image, pil, plain, mask, 1, "x"],
        [plain, plain.clone(), mask],
        (pil, plain),
        {"video": tv_tensors.Video(torch.rand(2, 3, 12, 14)), "plain": plain},
    ):
        ours, theirs = GaussianBlur(3, sigma=1.0)(sample), v2.GaussianBlur(3, sigma=1.0)(sample)
        flat_ours, _ = torch.utils._pytree.tree_flatten(ours)
        flat_theirs, _ = torch.utils._pytree.tree_flatten(theirs)
        flat_in, _ = torch.utils._pytree.tree_flatten(sample)
        for a, b, given in zip(flat_ours, flat_theirs, flat_in, strict=True):
            assert type(a) is type(b)
            assert (a is given) == (b is given)


@pytest.mark.slow
@pytest.mark.skipif(not HAS_TORCHVISION, reason="torchvision is not installed")
def test_compiled_blur_of_tv_tensors_is_the_eager_blur():
    """torch.compile (graph breaks allowed) of the transform on a sample of tv_tensors and of
    the function on an Image, as torchvision's compile."""
    from torchvision import tv_tensors

    torch._dynamo.reset()
    images = tv_tensors.Image(torch.rand(2, 3, 16, 16))
    boxes = tv_tensors.BoundingBoxes([[1, 2, 5, 6]], format="XYXY", canvas_size=(16, 16))
    sample = {"image": images, "boxes": boxes, "label": 1}
    blur = GaussianBlur(5, sigma=(0.5, 2.0))
    torch.manual_seed(4)
    eager = blur(sample)
    torch.manual_seed(4)
    compiled = torch.compile(blur)(sample)
    assert type(compiled["image"]) is tv_tensors.Image and compiled["label"] == 1
    torch.testing.assert_close(compiled["image"], eager["image"], rtol=0, atol=1e-6)

    def function(x):
        return cm.gaussian_blur(x, 5, 1.5)

    out = torch.compile(function)(images)
    assert type(out) is tv_tensors.Image
    torch.testing.assert_close(out, function(images), rtol=0, atol=1e-6)


@pytest.mark.skipif(not HAS_TORCHAUDIO, reason="torchaudio is not installed")
@pytest.mark.parametrize(
    ("rates", "kwargs"),
    [
        ((44100, 16000), {}),
        ((16000, 44100), {"dtype": torch.float64}),
        ((48000, 32000), {"resampling_method": "sinc_interp_kaiser", "beta": 8.0}),
        ((8000, 11025), {"lowpass_filter_width": 3, "rolloff": 0.9}),
    ],
)
def test_resample_state_dicts_load_into_each_other_strictly(rates, kwargs):
    import torchaudio

    ours, theirs = Resample(*rates, **kwargs), torchaudio.transforms.Resample(*rates, **kwargs)
    state = theirs.state_dict()
    assert list(ours.state_dict()) == list(state) == ["kernel"]
    torch.testing.assert_close(ours.kernel, theirs.kernel, rtol=0, atol=0)
    assert (ours.gcd, ours.width) == (theirs.gcd, theirs.width)
    ours.load_state_dict(state, strict=True)
    theirs.load_state_dict(ours.state_dict(), strict=True)
    dtype = kwargs.get("dtype", torch.float32)
    waveform = torch.randn(2, 2000, dtype=dtype)
    # torchaudio's float32 convolution sums in an order of its own.
    atol = 1e-12 if dtype == torch.float64 else 1e-4
    torch.testing.assert_close(ours(waveform), theirs(waveform), rtol=0, atol=atol)
    assert "kernel" not in Resample(16000, 16000).state_dict()


def test_resample_makes_torchaudios_kernel_only_when_asked():
    # 44.1 kHz to 16,001 Hz: torchaudio's kernel would be [16001, 1, 44161] (2.8 GB in float32).
    odd = Resample(44100, 16001)
    waveform = torch.randn(1, 4410)
    assert odd(waveform).shape == (1, 1601)
    small = Resample(48000, 16000)
    with pytest.raises(ValueError, match=r"kernel must have shape \[1, 1, "):
        small.load_state_dict(Resample(48000, 32000).state_dict())
    small.load_state_dict(Resample(48000, 16000).state_dict(), strict=True)


@pytest.mark.parametrize("method", ["sinc_interp_hann", "sinc_interp_kaiser"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_resample_holds_what_torchaudios_tests_check(method, dtype):
    """torchaudio's resample tests: the same rate gives the waveform back, twice and half the
    rate twice and half the samples, rates given as floats of integer values, and a cosine
    resampled within 0.1 of the cosine sampled at the new rate (away from the ends)."""
    waveform = torch.rand(1, 8000, dtype=dtype) * 2 - 1
    assert cm.resample(waveform, 16000, 16000, resampling_method=method) is waveform
    assert cm.resample(waveform, 16000, 32000, resampling_method=method).shape[-1] == 16000
    assert cm.resample(waveform, 16000, 8000, resampling_method=method).shape[-1] == 4000
    halved = cm.resample(waveform, 16000.0, 16000 / 2.0, resampling_method=method)
    torch.testing.assert_close(halved, cm.resample(waveform, 16000, 8000, resampling_method=method))
    times = torch.arange(0, 5, 1 / 1000, dtype=dtype)
    for new in (1050, 1950, 500, 26):
        estimate = cm.resample(
            123 * torch.cos(2 * math.pi * 3 * times)[None], 1000, new, resampling_method=method
        )[0]
        new_times = torch.arange(estimate.shape[0], dtype=dtype) / new
        truth = 123 * torch.cos(2 * math.pi * 3 * new_times)
        torch.testing.assert_close(estimate[20:-20], truth[20:-20], rtol=1e-4, atol=1e-1)


SIZES = [1, 3, (3, 1), [3, 5]]
SIGMAS = [None, 1.0, 1, (0.5,), [0.3], (0.3, 0.7), [0.9, 0.2]]


@pytest.mark.skipif(not HAS_TORCHVISION, reason="torchvision is not installed")
def test_every_size_and_sigma_form_of_torchvisions_kernel_tests():
    """What torchvision's kernel tests check, for each of their sizes and sigma forms: its
    result, the dtype kept, the input untouched, a batch the same as each image, and batches
    with no image ((0,), (5, 0), (0, 5) before the image's axes) of their shape."""
    from torchvision.transforms.v2 import functional

    image = torch.randint(0, 256, (3, 17, 11), dtype=torch.uint8)
    for size, sigma in itertools.product(SIZES, SIGMAS):
        version = image._version
        out = cm.gaussian_blur(image, size, sigma)
        assert image._version == version and out.dtype == torch.uint8
        theirs = functional.gaussian_blur(image, size, sigma)
        assert (out.int() - theirs.int()).abs().max() <= 1, (size, sigma)
        for batch in ((2,), (2, 1)):
            repeated = image.repeat(*batch, 1, 1, 1)
            expected = out.repeat(*batch, 1, 1, 1)
            torch.testing.assert_close(cm.gaussian_blur(repeated, size, sigma), expected)
        for batch in ((0,), (5, 0), (0, 5)):
            empty = torch.empty(batch + image.shape, dtype=image.dtype)
            assert cm.gaussian_blur(empty, size, sigma).shape == empty.shape


@pytest.mark.skipif(not HAS_TORCHVISION, reason="torchvision is not installed")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_torchvisions_reference_images(dtype):
    """torchvision's correctness cases (its OpenCV references): arange images of 3 x 10 x 12 and
    1 x 26 x 28, sizes (3, 3), (3, 5) and (23, 23), against torchvision's own result."""
    from torchvision.transforms.v2 import functional

    cases = [((3, 10, 12), (3, 3), 0.8), ((3, 10, 12), (3, 5), 0.5), ((1, 26, 28), (23, 23), 1.7)]
    for (channels, height, width), size, sigma in cases:
        pixels = np.arange(channels * height * width, dtype=np.uint8).reshape(height, width, -1)
        image = torch.from_numpy(pixels).permute(2, 0, 1).to(dtype)
        ours = cm.gaussian_blur(image, size, sigma)
        theirs = functional.gaussian_blur(image.double(), list(size), [sigma, sigma])
        assert ours.dtype == dtype
        tolerance = 0.25 if dtype == torch.float16 else 1e-3  # half a float16 step near 255
        torch.testing.assert_close(ours.double(), theirs, rtol=0, atol=tolerance)


def test_the_transform_pickles():
    blur = GaussianBlur((3, 5), sigma=(0.5, 1.5), per_image=True, border="zeros")
    again = pickle.loads(pickle.dumps(blur))
    assert (again.kernel_size, again.sigma, again.per_image, again.border) == (
        (3, 5),
        (0.5, 1.5),
        True,
        "zeros",
    )
    resample = pickle.loads(pickle.dumps(Resample(48000, 16000)))
    torch.testing.assert_close(resample.kernel, Resample(48000, 16000).kernel)
