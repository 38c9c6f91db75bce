# SPDX-License-Identifier: Apache-2.0
"""Frobulate in Python: its signature, its gradient and its Keras layer, for every framework.

The op's C++ description (frobulate_op.h) gives its names, table and attributes; this file what
the Python packages add to them (constmem.ops).
"""

# The name of the module constant that holds the most entries the table takes.
LIMIT = "MAX_TABLE_SIZE"
SIGNATURE = ("data", "table")
DOC = """Adds every entry of `table` to every element of `data`, in order.

`out[i] = (((data[i] + table[0]) + table[1]) + ... + table[n-1])`, evaluated left to right in
the data's dtype, each table entry converted to it first. On a GPU the table is read from
`__constant__` memory (or a by-value kernel parameter) with warp-uniform indices. GPU and CPU
results are bitwise equal except for NaN payloads (the GPU does not keep them) and subnormal data
(the CPU reads them as zero); docs/numerics.md.

Args:
  data: float32 or float64, any shape, including 0-d and empty.
  table: 1 to 1,048,576 integers that fit int32: an int32 tensor, or a Python or NumPy sequence
    (fixed per call site, uploaded at most once per device and content). Up to 16,384 entries
    are read from constant memory on a GPU, more from global memory.

The gradient with respect to data is the incoming gradient; an integer table has none.
"""

# The Keras layer: a fixed table, part of the layer's configuration.
LAYER = {"name": "Frobulate", "fixed_table": True}


def backward(F, grad, data, table, attrs, need_data, need_table):
    """d(sum(grad * out)) / d data = grad: the table only shifts the data."""
    return grad, None
