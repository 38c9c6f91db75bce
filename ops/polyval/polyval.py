# SPDX-License-Identifier: Apache-2.0
"""Polyval in Python: its signature, its gradient and its Keras layer, for every framework.

The op's C++ description (polyval_op.h) gives its names, table and attributes; this file what the
Python packages add to them (constmem.ops).
"""

# The name of the module constant that holds the most entries the table takes.
LIMIT = "MAX_COEFFICIENTS"
SIGNATURE = ("coeffs", "x")
DOC = """Evaluates the polynomial `coeffs` (highest degree first, as `np.polyval`) at every `x`.

`y = coeffs[0]; y = fma(y, x, coeffs[j]) for j = 1 .. n-1`: Horner's rule with one rounding per
step (a fused multiply-add), on the CPU as on the GPU, so that the two agree bit for bit;
`np.polyval` rounds twice per step and may differ in the last bits. On a GPU the coefficients are
read from `__constant__` memory (or a by-value kernel parameter) with warp-uniform indices.

Args:
  coeffs: 1 to 1,048,576 coefficients: a tensor of x's compute dtype (x's own; float32 for
    float16 and bfloat16 x), or a Python or NumPy sequence (fixed per call site, rounded to it).
    Up to 4,096 are read from constant memory on a GPU, more from global memory.
  x: float32, float64, float16 or bfloat16 (computed in float32, each result rounded once to
    x's dtype), any shape, including 0-d and empty.

Gradients flow to x (the derivative polynomial, evaluated by the same op) and to a tensor
`coeffs` (`sum(grad * x**k)`).
"""

# The Keras layer: `degree` + 1 trainable coefficients, the identity polynomial at first.
LAYER = {
    "name": "Polyval",
    "size": "degree",
    "size_to_entries": lambda degree: degree + 1,
    "initial": lambda n, attrs: [0.0] * (n - 2) + [1.0, 0.0] if n >= 2 else [0.0],
    "weight": "coefficients",
}


def backward(F, grad, x, coeffs, attrs, need_x, need_coeffs):
    """The gradients of sum(grad * polyval(coeffs, x)), by Horner's rule and power sums."""
    n = F.length(coeffs)
    grad_x = grad_coeffs = None
    if need_x:
        # p'(x) by the op itself, with a leading zero so that a constant's derivative is [0]: the
        # zero adds nothing (fma(0, x, d) = d for finite x).
        scale = F.arange(n - 1, 0, -1, like=coeffs)
        derivative = F.concat([F.zeros(1, like=coeffs), coeffs[:-1] * scale])
        grad_x = grad * F.op(x, derivative)
    if need_coeffs:
        # d / d coeffs[n-1-k] = sum(grad * x**k).
        grad_coeffs = F.flip(F.power_sums(x, grad, n))
    return grad_x, grad_coeffs
