"""Independent references for the tests: NumPy, evaluated the way the op's formula says."""

import numpy as np


def frobulate_reference(data, table):
    """Left-to-right sums in data's dtype, one NumPy pass per table entry."""
    data = np.asarray(data)
    out = data.copy()
    for entry in np.asarray(table):
        out = (out + data.dtype.type(entry)).astype(data.dtype)
    return out


def frobulate_float64(data, table):
    """The exact sum in float64, for a closeness check independent of rounding order."""
    return np.asarray(data, dtype=np.float64) + float(np.sum(np.asarray(table, dtype=np.float64)))


def random_case(rng, shape, dtype, table_size):
    data = (rng.standard_normal(shape) * 100).astype(dtype)
    table = rng.integers(-1000, 1000, size=table_size, dtype=np.int32)
    return data, table
