# SPDX-License-Identifier: Apache-2.0
"""constmem's three ops on real data, on the GPU if TensorFlow sees one (else the CPU), each checked
against NumPy and timed:
  Frobulate  16 Mi float32 elements, a 100-entry table, every table form;
  Polyval    the same elements through a degree-16 polynomial;
  FirFilter  the same elements as 1,024 rows of 16 Ki samples through a 17-tap filter.

Each form gets its table the way it is meant to arrive:
  input  an int32 tensor already in GPU memory, called eagerly: inside a tf.function TensorFlow
         keeps small int32 tensors in host memory (bench/tf_table_argument.py measures what that
         costs), so there the host form or an attr is the natural choice;
  host   made on the host inside a tf.function (an int32 constant: TensorFlow keeps those in host
         memory);
  attr   a NumPy array, fixed when the function is traced.
Timed: `--iterations` x `--chain` Frobulate calls (the chain inside one tf.function for host and
attr), queued back to back and read back once, so that the figure is the op's and not Python's."""

import argparse
import time

import constmem.tensorflow as cm
import numpy as np
import tensorflow as tf


def reference(data, table):
    out = data.copy()
    for entry in table:
        out += np.float32(entry)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--elements", type=int, default=16 * 1024 * 1024)
    parser.add_argument("--table-size", type=int, default=100)
    parser.add_argument("--iterations", type=int, help="timed function calls (GPU 20, CPU 5)")
    parser.add_argument(
        "--chain", type=int, help="Frobulate calls per function call (GPU 10, CPU 1)"
    )
    parser.add_argument(
        "--source",
        default="all",
        choices=["all", "input", "host", "attr"],
        help="how the table reaches the kernel (default: each in turn)",
    )
    args = parser.parse_args()

    gpus = tf.config.list_logical_devices("GPU")
    device = gpus[0].name if gpus else "/CPU:0"
    args.iterations = args.iterations or (20 if gpus else 5)
    args.chain = args.chain or (10 if gpus else 1)
    name = ""
    if gpus:
        details = tf.config.experimental.get_device_details(
            tf.config.list_physical_devices("GPU")[0]
        )
        name = f" ({details.get('device_name', 'GPU')})"
    rng = np.random.default_rng(2026)
    data = rng.standard_normal(args.elements).astype(np.float32)
    table = rng.integers(-1000, 1000, size=args.table_size, dtype=np.int32)
    expected = reference(data, table)
    print(f"device:   {device}{name}")
    print(
        f"problem:  {args.elements:,} float32 elements, table of {args.table_size} int32, "
        f"{args.iterations} x {args.chain} timed calls after warm-up"
    )
    failures = 0
    for source in ("input", "host", "attr") if args.source == "all" else (args.source,):
        mismatches, seconds = run(
            source, device, data, table, expected, args.iterations, args.chain
        )
        failures += mismatches > 0
        print(
            f"  {source:<6} check vs NumPy: {'OK' if mismatches == 0 else 'FAILED'} "
            f"({mismatches} mismatching)   time per call: {seconds * 1e3:7.3f} ms   "
            f"effective: {2 * data.nbytes / seconds / 1e9:7.1f} GB/s"
            f"   {args.elements * args.table_size / seconds / 1e9:7.1f} G adds/s"
        )
    if args.source == "all":
        failures += run_polyval_and_fir(device, data, args.iterations)
    return 0 if failures == 0 else 1


def timed(fn, x, iterations):
    """Seconds per call of fn(x), queued back to back and read back once."""
    fn(x)[0].numpy()  # warm-up: tracing, first upload
    start = time.perf_counter()
    for _ in range(iterations):
        y = fn(x)
    y[(0,) * len(y.shape)].numpy()
    return (time.perf_counter() - start) / iterations


def run_polyval_and_fir(device, data, iterations):
    """Polyval (degree 16) and FirFilter (17 taps, SAME) on the same data; returns failures."""
    coeffs = (1.0 / np.arange(2, 19)).astype(np.float32)  # degree 16
    taps = np.hanning(19)[1:-1].astype(np.float32)  # 17 taps
    rows = data.reshape(-1, 16384) if data.size % 16384 == 0 else data.reshape(1, -1)

    def report(label, reference, error, tolerance, op, x):
        ok = error <= tolerance
        seconds = timed(op, x, iterations)
        print(
            f"  {label:<20} check vs {reference}: {'OK' if ok else 'FAILED'} "
            f"(max error {error:.1e})   time per call: {seconds * 1e3:7.3f} ms   "
            f"effective: {2 * data.nbytes / seconds / 1e9:7.1f} GB/s"
        )
        return int(not ok)

    with tf.device(device):
        x = tf.constant(data)
        y = cm.polyval(coeffs, x).numpy()
        exact = np.polyval(coeffs.astype(np.float64), data.astype(np.float64))
        error = float(np.max(np.abs(y - exact) / np.maximum(np.abs(exact), 1.0)))  # relative
        failures = report(
            "polyval degree 16", "np.polyval", error, 1e-5, lambda v: cm.polyval(coeffs, v), x
        )
        signal = tf.constant(rows)
        y = cm.fir_filter(signal, taps).numpy()
        padded = np.pad(rows[:4].astype(np.float64), [(0, 0), (8, 8)])
        expected = np.array([np.correlate(r, taps.astype(np.float64), "valid") for r in padded])
        error = float(np.max(np.abs(y[:4] - expected)))
        failures += report(
            "fir_filter 17 taps",
            "np.correlate",
            error,
            1e-4,
            lambda v: cm.fir_filter(v, taps),
            signal,
        )
    return failures


def run(source, device, data, table, expected, iterations, chain):
    """Returns (mismatching elements, seconds per call) for one way of passing the table."""

    def chained(x, calls):
        t = table if source == "attr" else tf.constant(table)
        for _ in range(calls):
            x = cm.frobulate(x, t, source=source)
        return x

    with tf.device(device):
        x = tf.constant(data)
        if source == "input":
            device_table = tf.constant(table)  # eager: the tensor lives on `device`
            step = lambda x, calls: cm.frobulate(x, device_table, source="input")  # noqa: E731
            rounds = chain
        else:
            function = tf.function(chained, reduce_retracing=True)
            step = lambda x, calls: function(x, calls)  # noqa: E731
            rounds = 1
        mismatches = int(np.count_nonzero(step(x, 1).numpy() != expected))
        step(x, chain).numpy()  # warm-up: tracing, first upload
        start = time.perf_counter()
        y = x
        for _ in range(iterations * rounds):
            y = step(y, chain)
        y[0].numpy()  # waits for the last call; calls on one device run in order
    return mismatches, (time.perf_counter() - start) / (iterations * chain)


if __name__ == "__main__":
    raise SystemExit(main())
