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
    parser.add_argument("--source", default="input", choices=["input", "host", "attr"])
    args = parser.parse_args()

    gpus = tf.config.list_logical_devices("GPU")
    device = gpus[0].name if gpus else "/CPU:0"
    rng = np.random.default_rng(2026)
    data = rng.standard_normal(args.elements).astype(np.float32)
    table = rng.integers(-1000, 1000, size=args.table_size, dtype=np.int32)

    with tf.device(device):
        x = tf.constant(data)
        t = tf.constant(table)
        if args.source == "attr":
            step = tf.function(lambda x: constmem.frobulate(x, table))
            call = lambda: step(x)  # noqa: E731
        else:
            step = tf.function(lambda x, t: constmem.frobulate(x, t, source=args.source))
            call = lambda: step(x, t)  # noqa: E731
        out = call()
        expected = reference(data, table)
        mismatches = int(np.count_nonzero(out.numpy() != expected))
        for _ in range(3):
            call()
        call().numpy()
        start = time.perf_counter()
        for _ in range(args.iterations):
            out = call()
        out[0].numpy()  # waits for the last call; calls on one device run in order
        seconds = (time.perf_counter() - start) / args.iterations

    bytes_moved = 2 * data.nbytes
    print(f"device:           {device}" + (f" ({tf.config.experimental.get_device_details(tf.config.list_physical_devices('GPU')[0]).get('device_name', '')})" if gpus else ""))
    print(f"elements:         {args.elements:,} float32, table of {args.table_size} int32 ({args.source})")
    print(f"check vs NumPy:   {'OK' if mismatches == 0 else 'FAILED'} ({mismatches} mismatching elements)")
    print(f"time per call:    {seconds * 1e3:.3f} ms")
    print(f"effective GB/s:   {bytes_moved / seconds / 1e9:.1f} (8 bytes per element: read + write)")
    print(f"additions/s:      {args.elements * args.table_size / seconds / 1e9:.1f} G")
    return 0 if mismatches == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
