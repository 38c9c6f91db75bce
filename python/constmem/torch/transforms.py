# SPDX-License-Identifier: Apache-2.0
"""Modules in place of torchvision's and torchaudio's, on constmem's ops.

`GaussianBlur` takes `torchvision.transforms.v2.GaussianBlur`'s arguments and draws its sigma as
torchvision does (one value from torch's generator a call, so that the same seed gives the same
sigma); `per_image=True` draws one a image instead, all blurred in one call (as kornia's
`RandomGaussianBlur` offers). Like torchvision's v2 transforms it takes a tensor or any nest of
lists, tuples and dicts (a sample): tv_tensors `Image` and `Video` are blurred and keep their type,
a plain tensor is an image when the sample holds no tv_tensors image and it is the first plain
tensor, everything else (bounding boxes, masks, labels) passes through.

Both take float16 and bfloat16 data (computed in float32, returned in the data's dtype), and a
channels_last image batch comes back channels_last.

`Resample` takes `torchaudio.transforms.Resample`'s arguments and resamples the last axis as
`constmem.torch.resample` does (torchaudio's filter, designed once).

    from constmem.torch.transforms import GaussianBlur, Resample
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn
from torch.utils import _pytree

import constmem.torch as cm


def _tv_tensors():
    """torchvision.tv_tensors where torchvision is installed, else None."""
    try:
        from torchvision import tv_tensors
    except ImportError:
        return None
    return tv_tensors


def _pair(value: Any, name: str) -> tuple:
    if isinstance(value, numbers.Number):
        return (value, value)
    if isinstance(value, Sequence) and len(value) == 1:
        return (value[0], value[0])
    if isinstance(value, Sequence) and len(value) == 2:
        return tuple(value)
    raise ValueError(f"{name} should be a number or a sequence of one or two numbers; got {value}")


class GaussianBlur(nn.Module):
    """Blurs images with a Gaussian kernel of random sigma: torchvision.transforms.v2.GaussianBlur.

    Args:
      kernel_size: odd positive k, or (kx, ky) (x along the width).
      sigma: a fixed sigma (a positive number), or (min, max) from which each call draws one
        uniformly, as torchvision does (default (0.1, 2.0)).
      per_image: draw one sigma for each image of a batch instead of one for the call (the images
        being every axis before the channels of a channels-first tensor of rank 4 or more).
      border: "reflect" (torchvision's), "zeros" or "replicate".

    """

    def __init__(
        self,
        kernel_size: int | Sequence[int],
        sigma: float | Sequence[float] = (0.1, 2.0),
        per_image: bool = False,
        border: str = "reflect",
    ) -> None:
        super().__init__()
        sizes = _pair(kernel_size, "kernel_size")
        for k in sizes:
            if not isinstance(k, numbers.Integral) or isinstance(k, bool) or k <= 0 or k % 2 == 0:
                raise ValueError(
                    f"kernel_size should have odd and positive integers; got {kernel_size}"
                )
        if isinstance(sigma, numbers.Number):
            if not sigma > 0:
                raise ValueError(f"sigma should be positive; got {sigma}")
            low = high = float(sigma)
        elif isinstance(sigma, Sequence) and len(sigma) == 2:
            low, high = (float(s) for s in sigma)
            if not 0.0 < low <= high:
                raise ValueError(
                    f"sigma values should be positive and of the form (min, max); got {sigma}"
                )
        else:
            raise ValueError(f"sigma should be a number or a sequence of two numbers; got {sigma}")
        self.kernel_size = tuple(int(k) for k in sizes)
        self.sigma = (low, high)
        self.per_image = bool(per_image)
        self.border = border

    def extra_repr(self) -> str:
        """The arguments, as the module's repr shows them."""
        return (
            f"kernel_size={self.kernel_size}, sigma={self.sigma}, per_image={self.per_image}, "
            f"border={self.border!r}"
        )

    def _blur(self, image: torch.Tensor, sigma: Any) -> torch.Tensor:
        return cm.gaussian_blur(image, list(self.kernel_size), sigma, border=self.border)

    def forward(self, *inputs: Any) -> Any:
        """The sample with its images blurred; anything else in it is returned as it is."""
        sample = inputs if len(inputs) > 1 else inputs[0]
        leaves, spec = _pytree.tree_flatten(sample)
        targets = _image_leaves(leaves)
        if not self.per_image:
            # One draw a call, images or not, as torchvision's make_params: the same seed gives
            # the same sigma, and the generator advances alike.
            drawn = torch.empty(1).uniform_(self.sigma[0], self.sigma[1]).item()
            outputs = {i: self._blur(leaves[i], [drawn, drawn]) for i in targets}
        else:
            outputs = {}
            for i in targets:
                image = leaves[i]
                batch = image.shape[:-3].numel() if image.ndim >= 4 else 1
                draws = torch.empty(batch).uniform_(self.sigma[0], self.sigma[1])
                per = draws.to(torch.float64).reshape(-1, 1).expand(-1, 2)
                outputs[i] = self._blur(image, per if image.ndim >= 4 else float(draws[0]))
        tv_tensors = _tv_tensors()
        for i, out in outputs.items():
            if tv_tensors is not None and isinstance(leaves[i], tv_tensors.TVTensor):
                out = tv_tensors.wrap(out, like=leaves[i])
            leaves[i] = out
        return _pytree.tree_unflatten(leaves, spec)


def _image_leaves(leaves: list) -> list[int]:
    """The indices of the leaves torchvision's v2 transforms treat as images."""
    tv_tensors = _tv_tensors()
    if tv_tensors is not None:
        images = [
            i for i, x in enumerate(leaves) if isinstance(x, (tv_tensors.Image, tv_tensors.Video))
        ]
        if images:
            return images
        plain = [
            i
            for i, x in enumerate(leaves)
            if isinstance(x, torch.Tensor) and not isinstance(x, tv_tensors.TVTensor)
        ]
    else:
        plain = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor)]
    return plain[:1]


class Resample(nn.Module):
    """Resamples the last axis from orig_freq to new_freq: torchaudio.transforms.Resample.

    The filter is torchaudio's (`constmem.torch.resample`), designed once for the arguments in
    float64 and rounded to the waveform's dtype; `dtype` is accepted for torchaudio's signature
    and not needed.
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
