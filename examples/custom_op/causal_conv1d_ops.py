# SPDX-License-Identifier: Apache-2.0
"""CausalConv1d's op libraries, loaded with constmem: `tensorflow()`, `torch()` and `jax()` return a
module whose `causal_conv1d(x, weight, bias)` is the op in that framework; `reference()` computes
it in float64 with NumPy, `random_case()` makes inputs for it, and PLACEMENTS lists where its
launcher puts each table (check_placement_of() asks a library).

Each library loads once, on the first call; later calls are a dictionary lookup, which
torch.compile(fullgraph=True) traces through.
"""

import numpy as np
from causal_conv1d import causal_conv1d as description
from example_libraries import BUILD, loaders  # noqa: F401 (BUILD: the tests' build)

DESCRIPTIONS = {"causal_conv1d": description}
# (table, entries, source, placement) at each table's boundaries: its by-value capacity (1,024
# taps, 256 biases), its constant bank slot (4,096 taps, 1,024 biases), then global memory; a
# device table is never passed by value.
PLACEMENTS = [
    ("weight", 1024, "host", "by_value"),
    ("weight", 1025, "host", "constant_bank"),
    ("weight", 4096, "host", "constant_bank"),
    ("weight", 4097, "host", "global_memory"),
    ("weight", 4, "device", "constant_bank"),
    ("weight", 4097, "device", "global_memory"),
    ("bias", 256, "host", "by_value"),
    ("bias", 257, "host", "constant_bank"),
    ("bias", 1024, "host", "constant_bank"),
    ("bias", 1025, "host", "global_memory"),
    ("bias", 4, "device", "constant_bank"),
    ("bias", 1025, "device", "global_memory"),
]


tensorflow, torch, jax = loaders("causal_conv1d", DESCRIPTIONS)


def reference(x, weight, bias):
    """y[..., c, t] = bias[c] + sum_j weight[c * k + j] * x[..., c, t - k + 1 + j], in float64."""
    x = np.asarray(x, np.float64)
    channels, length = x.shape[-2:]
    weight = np.asarray(weight, np.float64).reshape(channels, -1)
    taps = weight.shape[1]
    padded = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(taps - 1, 0)])
    y = np.broadcast_to(np.asarray(bias, np.float64)[:, None], x.shape).copy()
    for j in range(taps):
        y += weight[:, j, None] * padded[..., j : j + length]
    return y


def random_case(shape, taps, seed):
    """(x, weight, bias) in float32 for x of `shape` [..., C, L] and `taps` taps a channel."""
    rng = np.random.default_rng(seed)
    channels = shape[-2]
    x = rng.standard_normal(shape).astype(np.float32)
    weight = (rng.standard_normal(channels * taps) / np.sqrt(taps)).astype(np.float32)
    bias = rng.standard_normal(channels).astype(np.float32)
    return x, weight, bias


def check_placement_of(ops, gpu_kernels):
    """`ops.placement_of` per table: PLACEMENTS from a library with GPU kernels, else None; the
    first table by default, and an unknown table refused by name."""
    try:
        ops.placement_of("causal_conv1d", 4, table="taps")
        raise AssertionError("an unknown table was taken")
    except ValueError as error:
        assert str(error) == "table must be one of weight, bias; got 'taps'", error
    weight = ops.placement_of("causal_conv1d", 1000, source="host")
    assert weight == ops.placement_of("causal_conv1d", 1000, source="host", table="weight")
    got = [
        (table, n, source, ops.placement_of("causal_conv1d", n, source=source, table=table))
        for table, n, source, _ in PLACEMENTS
    ]
    assert got == (PLACEMENTS if gpu_kernels else [(*row[:3], None) for row in PLACEMENTS]), got
