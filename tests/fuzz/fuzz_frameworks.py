# SPDX-License-Identifier: Apache-2.0
"""A fuzzer of the framework kernels, called as a direct caller would: PyTorch's stable-ABI kernels
(torch.ops.constmem.<op> and <op>_static) and TensorFlow's raw ops (every table form, eager, and
their shape functions in a tf.function), with any dtype, shape, stride, table and attribute.

    python tests/fuzz/fuzz_frameworks.py {torch,tensorflow} [--seed S] [--count N]

Every call must end in a result or a clean error of the framework's kind (PyTorch: ValueError,
RuntimeError or TypeError; TensorFlow: tf.errors.OpError, ValueError or TypeError); the process
keeps running under AddressSanitizer and UndefinedBehaviorSanitizer where the library is built so
(scripts/sanitize.sh); a result has the data's dtype; after every batch of bad calls a known-good
call is checked against NumPy; with PyTorch, the peak memory grows by at most 512 MB after the
first tenth of the calls (a leak per call; TensorFlow caches a kernel per attribute value). Prints
one summary line; exits 1 when anything was found.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import resource
import struct
import sys
from collections import Counter

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

BATCH = 200
# Growth of the peak resident memory past the first tenth of the calls that counts as a leak.
LEAK_BYTES = 512 << 20
WILD_FLOATS = (1e300, -1e300, math.inf, -math.inf, math.nan, 1e-320, 3.5e38, -0.0, 2.0**128)
# Past every int attribute's range: an in-range value as large as 2^31 - 1 makes a valid call whose
# result (upfirdn's up) fills this machine's memory, which is no entry point's test.
WILD_INTS = (0, -1, 2**31, -(2**31) - 1, 2**62, 2**63 - 1, -(2**63))


class Fuzz:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.calls = 0
        self.good = 0
        self.findings = 0
        self.outcomes: Counter[str] = Counter()

    def finding(self, what: str) -> None:
        self.findings += 1
        if self.findings <= 20:
            print(f"fuzz_frameworks: finding at call {self.calls}: {what}", file=sys.stderr)

    def chance(self, percent: float) -> bool:
        return self.rng.random() * 100 < percent

    def shape(self) -> list[int]:
        rank = self.rng.randrange(5) if self.chance(95) else self.rng.randrange(7)
        return [self.rng.randrange(7 if self.chance(92) else 40) for _ in range(rank)]

    def wild_dim(self) -> int:
        return self.rng.choice((0, 1, 2**40, 2**62, 2**63 - 1))

    def attr_value(self, attr) -> object:
        if attr.kind == "choice":
            if self.chance(85):
                return self.rng.choice(attr.choices)
            return self.rng.choice(("", "BAD", "same", "x" * 300, "SAME\x00"))
        if attr.kind == "float64":
            return self.rng.uniform(-10, 10) if self.chance(80) else self.rng.choice(WILD_FLOATS)
        return self.rng.randrange(1, 7) if self.chance(80) else self.rng.choice(WILD_INTS)

    def table_size(self, table) -> int:
        pick = self.rng.randrange(1000)
        if pick < 880:
            return table.min_size + self.rng.randrange(min(24, table.max_size))
        if pick < 885:
            return table.max_size + self.rng.choice((0, 1))
        return self.rng.choice((0, table.min_size - 1, 2, 6, 12))

    def summary(self, framework: str, seed: int) -> int:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items()))
        print(
            f"fuzz_frameworks {framework}: seed {seed}, {self.calls} calls ({kinds}; "
            f"known-good {self.good}), {self.findings} findings"
        )
        return 0 if self.findings == 0 else 1


def polyval_reference(x: np.ndarray, coeffs: list[float]) -> np.ndarray:
    return np.polyval(np.asarray(coeffs, x.dtype), x)


# ---- PyTorch ----


def fuzz_torch(fuzz: Fuzz, count: int) -> None:
    import constmem.torch as ctorch
    import torch

    ops = list(ctorch.OPS.values())
    dtypes = (
        torch.float32,
        torch.float64,
        torch.uint8,
        torch.float16,
        torch.bfloat16,
        torch.int32,
        torch.int64,
        torch.bool,
        torch.complex64,
    )
    table_dtypes = {"float32": torch.float32, "float64": torch.float64, "int32": torch.int32}

    def tensor(shape: list[int], dtype) -> torch.Tensor:
        if dtype.is_complex or dtype.is_floating_point:
            return torch.randn(shape, dtype=torch.float64).to(dtype)
        if dtype == torch.bool:
            return torch.rand(shape) > 0.5
        return torch.randint(0, 5, shape, dtype=dtype)

    def data(dtype) -> torch.Tensor:
        pick = fuzz.rng.randrange(100)
        shape = fuzz.shape()
        if pick < 60:
            return tensor(shape, dtype)
        if pick < 70 and len(shape) >= 2:
            return tensor(shape, dtype).transpose(-1, -2)
        if pick < 80 and shape:
            return tensor([*shape[:-1], shape[-1] * 2 + 1], dtype)[..., ::2]
        if pick < 88 and shape:
            return tensor([1] * len(shape), dtype).expand(shape)  # stride 0
        if pick < 94:  # huge and backed by one element
            dims = [
                fuzz.wild_dim() if fuzz.chance(50) else fuzz.rng.randrange(4)
                for _ in range(fuzz.rng.randrange(1, 4))
            ]
            try:
                return tensor([1] * len(dims), dtype).expand(dims)
            except RuntimeError:
                return tensor(shape, dtype)
        if pick < 97:
            return torch.empty(shape, dtype=dtype, device="meta")
        return tensor(shape, dtype).as_strided(shape, [0] * len(shape))

    def table(spec_table, data_dtype):
        size = fuzz.table_size(spec_table)
        expected = (
            "int32"
            if spec_table.int32
            else ("float64" if data_dtype == torch.float64 else "float32")
        )
        dtype = table_dtypes[expected] if fuzz.chance(90) else fuzz.rng.choice(dtypes)
        pick = fuzz.rng.randrange(100)
        if pick < 85:
            return tensor([size], dtype)
        if pick < 90:
            return tensor([size * 2], dtype)[::2]
        if pick < 93:
            return tensor([size, 2], dtype)
        if pick < 95:
            return tensor([], dtype)
        if pick < 97:
            return torch.empty([size], dtype=dtype, device="meta")
        return tensor([1], dtype).expand(size)

    def static_list(spec_table):
        size = fuzz.table_size(spec_table)
        if spec_table.int32:
            return [
                fuzz.rng.randrange(-4, 5) if fuzz.chance(97) else fuzz.rng.choice(WILD_INTS)
                for _ in range(size)
            ]
        return [
            fuzz.rng.uniform(-2, 2) if fuzz.chance(97) else fuzz.rng.choice(WILD_FLOATS)
            for _ in range(size)
        ]

    def one() -> None:
        spec = fuzz.rng.choice(ops)
        is_static = fuzz.chance(40)
        x_dtype = fuzz.rng.choice(dtypes[:3]) if fuzz.chance(85) else fuzz.rng.choice(dtypes)
        x = data(x_dtype)
        tables = [static_list(t) if is_static else table(t, x_dtype) for t in spec.tables]
        attrs = [fuzz.attr_value(a) for a in spec.attrs]
        op = getattr(torch.ops.constmem, spec.name + ("_static" if is_static else ""))
        fuzz.calls += 1
        try:
            y = op(x, *tables, *attrs)
        except (ValueError, RuntimeError, TypeError) as e:
            fuzz.outcomes[type(e).__name__] += 1
            return
        except Exception as e:
            fuzz.finding(f"{spec.name}: {type(e).__name__}: {e}")
            return
        fuzz.outcomes["result"] += 1
        if y.dtype != x.dtype:
            fuzz.finding(f"{spec.name}: a {y.dtype} result for {x.dtype} data")

    def known_good() -> None:
        fuzz.good += 1
        x = np.linspace(-2, 2, 24).reshape(4, 6)
        coeffs = [0.5, -1.0, 2.0, 0.25]
        for form in ("tensor", "static"):
            xt = torch.from_numpy(x)
            if form == "tensor":
                y = torch.ops.constmem.polyval(xt, torch.tensor(coeffs, dtype=torch.float64))
            else:
                y = torch.ops.constmem.polyval_static(xt, coeffs)
            if not np.allclose(y.numpy(), polyval_reference(x, coeffs), rtol=1e-14, atol=1e-14):
                fuzz.finding(f"the known-good polyval call ({form}) differs from NumPy")

    run(fuzz, count, one, known_good)


def peak_memory() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def run(fuzz: Fuzz, count: int, one, known_good, leak_check: bool = True) -> None:
    """Batches of calls, each followed by the known-good call; then a check that memory stayed."""
    settled = None
    while fuzz.calls < count:
        for _ in range(min(BATCH, count - fuzz.calls)):
            one()
        known_good()
        if settled is None and fuzz.calls >= count // 10:
            settled = (fuzz.calls, peak_memory())
    if leak_check and settled is not None and peak_memory() - settled[1] > LEAK_BYTES:
        grown = (peak_memory() - settled[1]) >> 20
        fuzz.finding(f"memory grew by {grown} MB over calls {settled[0]} to {fuzz.calls}")


# ---- TensorFlow ----


def float_bits(value: float, dtype: str) -> int:
    if dtype == "float64":
        return struct.unpack("<q", struct.pack("<d", value))[0]
    return struct.unpack("<i", struct.pack("<f", np.float32(value)))[0]


def fuzz_tensorflow(fuzz: Fuzz, count: int) -> None:
    import constmem.tensorflow as ctf
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")  # TensorFlow's own warning for each shape it refuses
    from constmem.tensorflow import _loader

    module = _loader.ops()
    ops = list(ctf.OPS.values())
    dtypes = (tf.float32, tf.float64, tf.uint8, tf.float16, tf.int32, tf.int64)
    errors = (tf.errors.OpError, ValueError, TypeError)

    def tensor(shape: list[int], dtype) -> tf.Tensor:
        values = np.random.default_rng(fuzz.rng.randrange(2**32)).standard_normal(shape)
        if dtype.is_integer:
            values = np.abs(values) * 3
        return tf.constant(values.astype(dtype.as_numpy_dtype))

    def attr_kwargs(spec, data_dtype: str) -> dict:
        kwargs = {}
        for attr in spec.attrs:
            value = fuzz.attr_value(attr)
            if attr.kind == "float64":
                bits = float_bits(value, "float64")
                value = bits if fuzz.chance(97) else fuzz.rng.choice(WILD_INTS)
            kwargs[attr.name] = value
        return kwargs

    def one() -> None:
        spec = fuzz.rng.choice(ops)
        form = fuzz.rng.choice(("", "_host_table", "_attr"))
        fn = getattr(module, f"constmem_{spec.name}{form}")
        x_dtype = fuzz.rng.choice(dtypes[:3]) if fuzz.chance(85) else fuzz.rng.choice(dtypes)
        compute = "float64" if x_dtype == tf.float64 else "float32"
        kwargs = attr_kwargs(spec, compute)
        for t in spec.tables:
            size = fuzz.table_size(t)
            if form == "_attr":
                if t.int32:
                    kwargs[t.name] = [fuzz.rng.randrange(-4, 5) for _ in range(size)]
                else:
                    kwargs[t.name] = [
                        float_bits(fuzz.rng.uniform(-2, 2), compute)
                        if fuzz.chance(97)
                        else fuzz.rng.choice(WILD_INTS)
                        for _ in range(size)
                    ]
            else:
                expected = tf.float64 if compute == "float64" else tf.float32
                expected = tf.int32 if t.int32 else expected
                dtype = expected if fuzz.chance(90) else fuzz.rng.choice(dtypes)
                shape = [size] if fuzz.chance(95) else fuzz.rng.choice(([], [size, 2]))
                kwargs[t.name] = tensor(shape, dtype)
        fuzz.calls += 1
        if fuzz.chance(3):  # the shape function alone, with unknown and huge dimensions
            rank = fuzz.rng.randrange(5)
            dims = [
                fuzz.rng.choice((None, None, 0, 1, 3, 2**20, 2**31, 2**40, 2**62))
                for _ in range(rank)
            ]
            tables = {k: v for k, v in kwargs.items() if isinstance(v, tf.Tensor)}
            rest = {k: v for k, v in kwargs.items() if not isinstance(v, tf.Tensor)}
            signature = [tf.TensorSpec(dims, x_dtype)] + [
                tf.TensorSpec([None], v.dtype) for v in tables.values()
            ]
            names = list(tables)

            def traced(x, *table_values):
                return fn(x, **dict(zip(names, table_values, strict=True)), **rest)

            try:
                tf.function(traced).get_concrete_function(*signature)
            except errors as e:
                fuzz.outcomes["shape:" + type(e).__name__] += 1
                return
            except Exception as e:
                fuzz.finding(f"{spec.name}{form} shape function: {type(e).__name__}: {e}")
                return
            fuzz.outcomes["shape:ok"] += 1
            return
        x = tensor(fuzz.shape(), x_dtype)
        try:
            y = fn(x, **kwargs)
        except errors as e:
            fuzz.outcomes[type(e).__name__] += 1
            return
        except Exception as e:
            fuzz.finding(f"{spec.name}{form}: {type(e).__name__}: {e}")
            return
        fuzz.outcomes["result"] += 1
        if y.dtype != x.dtype:
            fuzz.finding(f"{spec.name}{form}: a {y.dtype} result for {x.dtype} data")

    def known_good() -> None:
        fuzz.good += 1
        x = np.linspace(-2, 2, 24).reshape(4, 6)
        coeffs = [0.5, -1.0, 2.0, 0.25]
        ys = {
            "input": module.constmem_polyval(x=x, coeffs=tf.constant(coeffs, tf.float64)),
            "attr": module.constmem_polyval_attr(
                x=x, coeffs=[float_bits(c, "float64") for c in coeffs]
            ),
        }
        for form, y in ys.items():
            if not np.allclose(y.numpy(), polyval_reference(x, coeffs), rtol=1e-14, atol=1e-14):
                fuzz.finding(f"the known-good polyval call ({form}) differs from NumPy")

    # TensorFlow caches a kernel for each distinct attribute value (each attr table): its memory
    # grows with the calls whatever the kernels do.
    run(fuzz, count, one, known_good, leak_check=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("framework", choices=("torch", "tensorflow"))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=10000)
    args = parser.parse_args()
    fuzz = Fuzz(args.seed)
    (fuzz_torch if args.framework == "torch" else fuzz_tensorflow)(fuzz, args.count)
    return fuzz.summary(args.framework, args.seed)


if __name__ == "__main__":
    sys.exit(main())
