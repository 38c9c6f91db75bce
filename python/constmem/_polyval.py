# SPDX-License-Identifier: Apache-2.0
"""Polyval's coefficient gradient, planned once for the framework bindings that run it eagerly.

d(sum(grad * polyval(coeffs, x))) / d coeffs[n-1-k] = sum(grad * x**k), for k < n coefficients.
TensorFlow and PyTorch compute it in blocks of at most 16 powers, so that at most [elements, 16]
powers exist at once instead of [elements, n] (n reaches 4,096); each power is one `pow`, as when
they were all computed at once. JAX compiles the whole sum, which XLA fuses into one reduction.
"""

from __future__ import annotations

from typing import Any

MAX_POWERS_PER_BLOCK = 16


def coefficient_gradient_blocks(n: Any) -> tuple[Any, Any]:
    """(blocks, powers per block) covering the exponents 0 .. n-1 in near-equal blocks.

    `n` is an int or an integer tensor (TensorFlow's dynamic sizes): only `+` and `//` are used.
    """
    blocks = (n + MAX_POWERS_PER_BLOCK - 1) // MAX_POWERS_PER_BLOCK
    return blocks, (n + blocks - 1) // blocks
