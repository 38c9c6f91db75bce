# SPDX-License-Identifier: Apache-2.0
"""Interpolate in Python: its signature, checks, gradient and Keras layer, for every framework.

The op's C++ description (interpolate_op.h) gives its names, table and attributes; this file what
the Python packages add to them (constmem.ops).
"""

# The name of the module constant that holds the most entries the table takes.
LIMIT = "MAX_KNOTS"
SIGNATURE = ("x", "knots", "lo", "hi")
DOC = """Interpolates linearly into `knots`, n values at n equally spaced points over [lo, hi].

`np.interp(x, np.linspace(lo, hi, n), knots)`, clamped to the end knots outside [lo, hi], NaN
for NaN, computed as `t = (x - lo) * ((n - 1) / (hi - lo))`, `i = floor(t)`,
`y = fma(t - i, knots[i + 1] - knots[i], knots[i])` in x's dtype, on the CPU as on the GPU (bit
for bit). On a GPU every element reads the knots at its own index: they are staged into each
block's shared memory (up to 64 KiB) or read from global memory (float32: with the first 64 KiB
staged all the same), never from constant memory, which serialises such reads.

Args:
  x: float32, float64, float16 or bfloat16 (computed in float32, each result rounded once to
    x's dtype), any shape.
  knots: 2 to 1,048,576 values: a tensor of x's compute dtype (x's own; float32 for float16 and
    bfloat16 x), or a Python or NumPy sequence (fixed per call site, rounded to it).
  lo: where the first knot lies; finite, below hi in x's dtype.
  hi: where the last knot lies; finite.

Gradients flow to x (the slope of its segment, zero outside [lo, hi]) and to a tensor `knots`.
"""

# The Keras layer: `knots` trainable knots over [lo, hi], the identity at first.
LAYER = {
    "name": "Interpolate",
    "size": "knots",
    "size_to_entries": lambda knots: knots,
    "initial": lambda n, attrs: [
        attrs["lo"] + (attrs["hi"] - attrs["lo"]) * j / (n - 1) for j in range(n)
    ],
    "weight": "knots",
    "variable": "values",
    "defaults": {"lo": -1.0, "hi": 1.0},
}


def check(attrs):
    """The range must be increasing (finite values are checked by kind)."""
    if not attrs["lo"] < attrs["hi"]:
        raise ValueError(
            f"the range [lo, hi] must be finite with lo < hi; got [{attrs['lo']}, {attrs['hi']}]"
        )


def backward(F, grad, x, knots, attrs, need_x, need_knots):
    """d/dx and d/dknots of sum(grad * y), in the op's own arithmetic."""
    n = F.length(knots)
    lo = F.scalar(attrs["lo"], like=x)
    last = F.scalar(n - 1, like=x)
    scale = last / (F.scalar(attrs["hi"], like=x) - lo)
    t = (x - lo) * scale
    inside = (t > 0) & (t < last)
    # t clamped to [0, n - 1] (NaN to 0): the segment of every x, the last one above hi.
    clamped = F.where(t >= last, last, F.where(inside, t, 0))
    i = F.minimum(F.floor_int(clamped), n - 2)
    f = clamped - F.cast(i, like=x)
    below, above = F.gather(knots, i), F.gather(knots, i + 1)
    grad_x = F.where(inside, grad * ((above - below) * scale), 0) if need_x else None
    if not need_knots:
        return grad_x, None
    # Inside, the weights of the two knots around x; below lo all of it on the first knot, above
    # hi on the last.
    at_below = F.where(inside, grad * (1 - f), F.where(t <= 0, grad, 0))
    at_above = F.where(inside, grad * f, F.where(t >= last, grad, 0))
    grad_knots = F.scatter_add(n, i, at_below, like=knots) + F.scatter_add(
        n, i + 1, at_above, like=knots
    )
    return grad_x, grad_knots
