"""Frobulate on real data: 16 Mi float32 elements, a 100-entry table, on the GPU if TensorFlow sees
one (else the CPU); checked against NumPy, timed, and reported as time per call and GB/s."""

import argparse
import time

import numpy as np
import tensorflow as tf

import constmem


def reference(data, table):
    out = data.copy()
    for entry in table:
        out += np.float32(entry)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--elements", type=int, default=16 * 1024 * 1024)
    parser.add_argument("--table-size", type=int, default=100)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--source", default="all", choices=["all", "input", "host", "attr"],
                        help="how the table reaches the kernel (default: each in turn)")
    args = parser.parse_args()

    gpus = tf.config.list_logical_devices("GPU")
    device = gpus[0].name if gpus else "/CPU:0"
    name = ""
    if gpus:
        details = tf.config.experimental.get_device_details(tf.config.list_physical_devices("GPU")[0])
        name = f" ({details.get('device_name', 'GPU')})"
    rng = np.random.default_rng(2026)
    data = rng.standard_normal(args.elements).astype(np.float32)
    table = rng.integers(-1000, 1000, size=args.table_size, dtype=np.int32)
    expected = reference(data, table)
    print(f"device:   {device}{name}")
    print(f"problem:  {args.elements:,} float32 elements, table of {args.table_size} int32, "
          f"{args.iterations} timed calls after warm-up")
    failures = 0
    for source in (("input", "host", "attr") if args.source == "all" else (args.source,)):
        mismatches, seconds = run(source, device, data, table, expected, args.iterations)
        failures += mismatches > 0
        print(f"  {source:<6} check vs NumPy: {'OK' if mismatches == 0 else 'FAILED'} ({mismatches} mismatching)"
              f"   time per call: {seconds * 1e3:7.3f} ms   effective: {2 * data.nbytes / seconds / 1e9:7.1f} GB/s"
              f"   {args.elements * args.table_size / seconds / 1e9:7.1f} G adds/s")
    return 0 if failures == 0 else 1


def run(source, device, data, table, expected, iterations):
    """Returns (mismatching elements, seconds per call) for one way of passing the table."""
    with tf.device(device):
        x = tf.constant(data)
        device_table = tf.constant(table)
    with tf.device("/CPU:0"):
        host_table = tf.constant(table)  # int32 tables live on the host in TensorFlow graphs
    with tf.device(device):
        if source == "attr":
            step = tf.function(lambda x: constmem.frobulate(x, table))
            call = lambda: step(x)  # noqa: E731
        else:
            t = host_table if source == "host" else device_table
            step = tf.function(lambda x, t: constmem.frobulate(x, t, source=source))
            call = lambda: step(x, t)  # noqa: E731
        mismatches = int(np.count_nonzero(call().numpy() != expected))
        for _ in range(3):
            call()
        call().numpy()
        start = time.perf_counter()
        for _ in range(iterations):
            out = call()
        out[0].numpy()  # waits for the last call; calls on one device run in order
    return mismatches, (time.perf_counter() - start) / iterations


if __name__ == "__main__":
    raise SystemExit(main())
