# SPDX-License-Identifier: Apache-2.0
"""ApplyGain in Python: its signature, documentation and gradient, for every framework.

The C++ description (apply_gain_op.h) gives its names, table and attributes; constmem's
`load_library` of each framework makes the op's function from both.
"""

SIGNATURE = ("x", "gains")
DOC = """Scales every row of `x` (all but its last axis flattened) by its own gain.

Args:
  x: float32, rank 1 or more.
  gains: one gain per row: a tensor of float32, or a Python or NumPy sequence.
"""


def backward(F, grad, x, gains, attrs, need_x, need_gains):
    """dx = grad scaled as y is (the op itself); dgains[r] = sum over row r of grad * x."""
    grad_x = F.op(grad, gains) if need_x else None
    grad_gains = F.row_sums(grad * x) if need_gains else None
    return grad_x, grad_gains
