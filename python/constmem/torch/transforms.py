# SPDX-License-Identifier: Apache-2.0
"""Modules in place of torchvision's and torchaudio's, on constmem's ops.

`GaussianBlur` takes `torchvision.transforms.v2.GaussianBlur`'s arguments and draws its sigma as
torchvision does (one value from torch's generator a call, so that the same seed gives the same
sigma); `per_image=True` draws one a image instead, all blurred in one call (as kornia's
`RandomGaussianBlur` offers). Like torchvision's v2 transforms it takes a tensor or any nest of
lists, tuples and dicts (a sample): tv_tensors `Image` and `Video` are blurred and keep their type,
PIL images come back as blurred PIL images, a plain tensor is an image when the sample holds none
of those and it is the first plain tensor, everything else (bounding boxes, masks, labels) passes
through.

Both take float16 and bfloat16 data (computed in float32, returned in the data's dtype), and a
channels_last image batch comes back channels_last.

`Resample` takes `torchaudio.transforms.Resample`'s arguments and resamples the last axis as
`constmem.torch.resample` does (torchaudio's filter, designed once); its state_dict holds
torchaudio's `kernel`, so that the two modules' checkpoints load into each other.

    from constmem.torch.transforms import GaussianBlur, Resample
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn
from torch.utils import _pytree

import constmem.torch as cm
from constmem.ops.separable_filter import kernel_sizes
from constmem.ops.upfirdn import KAISER_BETA as _KAISER_BETA


def _sigma_range(sigma: Any) -> tuple[float, float]:
    """(min, max) of GaussianBlur's sigma, as torchvision.transforms.v2.GaussianBlur takes it.

    A positive number (fixed), or a sequence of one (fixed) or two (min, max) numbers.
    """
    if isinstance(sigma, (int, float)) and not isinstance(sigma, bool):
        values = (sigma, sigma)
    elif isinstance(sigma, Sequence) and not isinstance(sigma, str):
        if len(sigma) not in (1, 2):
            raise ValueError(
                f"If sigma is a sequence its length should be 1 or 2. Got {len(sigma)}: {sigma!r}"
            )
        values = (sigma[0], sigma[-1])
    else:
        values = ()
    if not values or not all(
        isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values
    ):
        raise TypeError(
            f"sigma should be a number or a sequence of numbers; got {sigma!r} "
            f"({type(sigma).__name__})"
        )
    low, high = (float(v) for v in values)
    if not 0.0 < low <= high:
        raise ValueError(
            f"sigma values should be positive and of the form (min, max). Got {sigma!r}"
        )
    return low, high


def _kernel_size(kernel_size: Any) -> tuple[int, int]:
    """(kx, ky) of GaussianBlur's kernel_size, with torchvision's v2 GaussianBlur's messages.

    An integer, or a sequence of one (k, k) or two; a TypeError for what is neither.
    """
    if isinstance(kernel_size, Sequence) and not isinstance(kernel_size, str):
        if len(kernel_size) == 1:
            kernel_size = (kernel_size[0], kernel_size[0])
        elif len(kernel_size) != 2:
            raise ValueError(
                f"Kernel size should be a tuple/list of two integers. Got {kernel_size!r}"
            )
    try:
        return kernel_sizes(kernel_size)
    except ValueError:  # the one left: sizes that are not odd and positive
        raise ValueError(
            f"Kernel size value should be an odd and positive number. Got {kernel_size!r}"
        ) from None


class GaussianBlur(nn.Module):
    """Blurs images with a Gaussian kernel of random sigma: torchvision.transforms.v2.GaussianBlur.

    Args:
      kernel_size: odd positive k, or (kx, ky) (x along the width); a sequence of one is (k, k).
      sigma: a fixed sigma (a positive number, or a sequence of one), or (min, max) from which
        each call draws one uniformly, as torchvision does (default (0.1, 2.0)).
      per_image: draw one sigma for each image of a batch instead of one for the call (the images
        being every axis before the channels of a channels-first tensor of rank 4 or more).
      border: "reflect" (torchvision's), "zeros" or "replicate".

    Raises TypeError for arguments of the wrong type and ValueError for bad values, as
    torchvision does.

    """

    def __init__(
        self,
        kernel_size: int | Sequence[int],
        sigma: float | Sequence[float] = (0.1, 2.0),
        per_image: bool = False,
        border: str = "reflect",
    ) -> None:
        super().__init__()
        self.kernel_size = _kernel_size(kernel_size)
        self.sigma = _sigma_range(sigma)
        self.per_image = bool(per_image)
        self.border = border

    def make_params(self, flat_inputs: list[Any]) -> dict[str, Any]:
        """The call's sigma, {"sigma": [s, s]}: torchvision's make_params, one draw a call."""
        sigma = torch.empty(1).uniform_(self.sigma[0], self.sigma[1]).item()
        return {"sigma": [sigma, sigma]}

    def extra_repr(self) -> str:
        """The arguments, as the module's repr shows them."""
        return (
            f"kernel_size={self.kernel_size}, sigma={self.sigma}, per_image={self.per_image}, "
            f"border={self.border!r}"
        )

    def _blur(self, image: Any, sigma: Any) -> Any:
        return cm.gaussian_blur(image, list(self.kernel_size), sigma, border=self.border)

    def forward(self, *inputs: Any) -> Any:
        """The sample with its images blurred; anything else in it is returned as it is."""
        sample = inputs if len(inputs) > 1 else inputs[0]
        leaves, spec = _pytree.tree_flatten(sample)
        targets = _image_leaves(leaves)
        if not self.per_image:
            # One draw a call, images or not, as torchvision's make_params: the same seed gives
            # the same sigma, and the generator advances alike.
            sigma = self.make_params(leaves)["sigma"]
            for i in targets:
                leaves[i] = self._blur(leaves[i], sigma)
        else:
            for i in targets:
                image = leaves[i]
                batched = isinstance(image, torch.Tensor) and image.ndim >= 4
                batch = image.shape[:-3].numel() if batched else 1
                draws = torch.empty(batch).uniform_(self.sigma[0], self.sigma[1])
                per = draws.to(torch.float64).reshape(-1, 1).expand(-1, 2)
                leaves[i] = self._blur(image, per if batched else float(draws[0]))
        return _pytree.tree_unflatten(leaves, spec)


def _image_leaves(leaves: list) -> list[int]:
    """The indices of the leaves torchvision's v2 transforms blur.

    tv_tensors Image and Video and PIL images; where the sample holds none of them, its first
    plain tensor.
    """
    tv_tensors = sys.modules.get("torchvision.tv_tensors")
    pil = sys.modules.get("PIL.Image")
    images = [
        i
        for i, x in enumerate(leaves)
        if (tv_tensors is not None and isinstance(x, (tv_tensors.Image, tv_tensors.Video)))
        or (pil is not None and isinstance(x, pil.Image))
    ]
    if images:
        return images
    for i, x in enumerate(leaves):
        if isinstance(x, torch.Tensor) and not (
            tv_tensors is not None and isinstance(x, tv_tensors.TVTensor)
        ):
            return [i]
    return []


class Resample(nn.Module):
    """Resamples the last axis from orig_freq to new_freq: torchaudio.transforms.Resample.

    The filter is torchaudio's (`constmem.torch.resample`), designed once for the arguments in
    float64 and rounded to the waveform's dtype. Where the rates differ the module's state_dict
    holds torchaudio's `kernel` (its values, shape [new, 1, 2 * width + orig] after the gcd,
    dtype `dtype` or float32), so that the state_dicts of the two load into each other strictly,
    and `module.kernel` gives it; the resampling does not read it, so that it is made only when
    asked for (for coprime rates such as 44.1 kHz and 16,001 Hz it is gigabytes: torchaudio
    holds it from the start).
    """

    def __init__(
        self,
        orig_freq: int = 16000,
        new_freq: int = 16000,
        resampling_method: str = "sinc_interp_hann",
        lowpass_filter_width: int = 6,
        rolloff: float = 0.99,
        beta: float | None = None,
        *,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.orig_freq = orig_freq
        self.new_freq = new_freq
        self.resampling_method = resampling_method
        self.lowpass_filter_width = lowpass_filter_width
        self.rolloff = rolloff
        self.beta = beta
        # Checks every argument now, as torchaudio does when it makes its kernel.
        self.forward(torch.zeros(1, 1))
        self.gcd = math.gcd(int(orig_freq), int(new_freq))
        self._dtype = dtype
        if orig_freq != new_freq:
            orig, new = int(orig_freq) // self.gcd, int(new_freq) // self.gcd
            self.width = math.ceil(lowpass_filter_width * orig / (min(orig, new) * rolloff))
            self.register_state_dict_post_hook(_save_kernel)
            self.register_load_state_dict_pre_hook(_load_kernel)

    @property
    def kernel(self) -> torch.Tensor:
        """Torchaudio's kernel for these arguments, made on each access.

        AttributeError at one rate, where torchaudio has none.
        """
        if self.orig_freq == self.new_freq:
            raise AttributeError("Resample at one rate has no kernel")
        return _torchaudio_kernel(
            self.orig_freq,
            self.new_freq,
            self.lowpass_filter_width,
            self.rolloff,
            self.resampling_method,
            self.beta,
            self._dtype,
        )[0]

    def extra_repr(self) -> str:
        """The rates, as the module's repr shows them."""
        return f"orig_freq={self.orig_freq}, new_freq={self.new_freq}"

    def forward(self, waveform: torch.Tensor) -> torch.Tensor:
        """The waveform resampled along its last axis."""
        return cm.resample(
            waveform,
            self.orig_freq,
            self.new_freq,
            lowpass_filter_width=self.lowpass_filter_width,
            rolloff=self.rolloff,
            resampling_method=self.resampling_method,
            beta=self.beta,
        )


def _save_kernel(module: Resample, state_dict: dict, prefix: str, local_metadata: dict) -> None:
    """Torchaudio's `kernel` entry in the module's state_dict, made as it is saved."""
    state_dict[prefix + "kernel"] = module.kernel


def _load_kernel(module: Resample, state_dict: dict, prefix: str, *_args) -> None:
    """Takes torchaudio's `kernel` entry, which the module makes from its arguments, off the state.

    Its shape is checked against the module's (a kernel of other rates is a ValueError).
    """
    kernel = state_dict.pop(prefix + "kernel", None)
    if kernel is None:
        return
    orig = module.orig_freq // module.gcd
    new = module.new_freq // module.gcd
    expected = (new, 1, 2 * module.width + orig)
    if tuple(kernel.shape) != expected:
        raise ValueError(
            f"{prefix}kernel must have shape {list(expected)} for Resample from "
            f"{module.orig_freq} to {module.new_freq}; got {list(kernel.shape)}"
        )


def _torchaudio_kernel(
    orig_freq: int,
    new_freq: int,
    width_zeros: float,
    rolloff: float,
    method: str,
    beta: float | None,
    dtype: torch.dtype | None,
) -> tuple[torch.Tensor, int]:
    """(kernel, width): torchaudio.transforms.Resample's buffer and width, as torchaudio makes them.

    kernel[i, 0, m] is the windowed sinc at torchaudio's t = (-i / new + (m - w) / orig) * base,
    clamped to the window; in `dtype` where given, else in float64 and stored as float32.
    """
    gcd = math.gcd(int(orig_freq), int(new_freq))
    orig, new = int(orig_freq) // gcd, int(new_freq) // gcd
    base = min(orig, new) * rolloff
    width = math.ceil(width_zeros * orig / base)
    offsets = torch.arange(-width, width + orig, dtype=dtype or torch.float64)[None, None] / orig
    t = torch.arange(0, -new, -1, dtype=dtype)[:, None, None] / new + offsets
    t = (t * base).clamp(-width_zeros, width_zeros)
    if method == "sinc_interp_hann":
        window = torch.cos(t * math.pi / width_zeros / 2) ** 2
    else:
        b = torch.tensor(float(_KAISER_BETA if beta is None else beta))
        window = torch.i0(b * torch.sqrt(1 - (t / width_zeros) ** 2)) / torch.i0(b)
    t = t * math.pi
    kernel = torch.where(t == 0, torch.tensor(1.0).to(t), t.sin() / t) * (window * (base / orig))
    return (kernel if dtype is not None else kernel.to(torch.float32)), width
