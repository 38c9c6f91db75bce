# SPDX-License-Identifier: Apache-2.0
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


def flush_subnormals(data):
    """Subnormal values read as zero of the same sign, as TensorFlow's CPU threads see them."""
    data = np.asarray(data)
    tiny = np.finfo(data.dtype).tiny
    return np.where(
        (np.abs(data) < tiny) & (data != 0), np.copysign(data.dtype.type(0), data), data
    )


def special_values(dtype):
    """NaN of both signs and with a payload, infinities, signed zeros, extremes and subnormals."""
    info = np.finfo(dtype)
    payload_nan = (
        np.array([0x7FC01234], np.uint32).view(np.float32)[0]
        if dtype == np.float32
        else np.array([0xFFF8000000ABCDEF], np.uint64).view(np.float64)[0]
    )
    return np.array(
        [
            np.nan,
            -np.nan,
            payload_nan,
            np.inf,
            -np.inf,
            0.0,
            -0.0,
            info.max,
            info.min,
            info.tiny,
            info.tiny / 4,
            -info.tiny / 4,
            info.smallest_subnormal,
            -info.smallest_subnormal,
            1.0,
            -1.0,
        ],
        dtype=dtype,
    )
