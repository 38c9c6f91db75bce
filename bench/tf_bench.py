"""TensorFlow-level figures: per-call cost of Frobulate against tf.add on 1 Ki elements, and
throughput at 64 Mi elements against the kernel-level figure, for each way the table arrives.

  tf_bench.py [--json FILE] [--kernel-json FILE] [--smoke]
Times are medians of 5 timed repetitions after a warm-up. Without a GPU (or with --smoke) it runs
tiny sizes on the CPU to show the script works; those figures mean nothing.
"""

import argparse
import json
import statistics
import time

import numpy as np
import tensorflow as tf

import constmem

SOURCES = ("input", "host", "attr")


def median_seconds(fn, repetitions=5):
    fn()  # warm-up: tracing, kernel load, first upload
    times = []
    for _ in range(repetitions):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def per_call_loop(device, table, iterations, elements):
    """Seconds per op inside one tf.function loop: each iteration depends on the last."""
    with tf.device(device):
        x0 = tf.constant(np.random.default_rng(0).standard_normal(elements).astype(np.float32))
        addend = tf.constant(np.float32(1.0))
        device_table = tf.constant(table)
    with tf.device("/CPU:0"):
        host_table = tf.constant(table)  # feeds the HostMemory input without a device-to-host copy

    def loop(step):
        @tf.function
        def run(x):
            for _ in tf.range(iterations):
                x = step(x)
            return x

        def call():
            with tf.device(device):
                run(x0)[0].numpy()

        return median_seconds(call) / iterations

    results = {"tf.add": loop(lambda x: x + addend)}
    results["input"] = loop(lambda x: constmem.frobulate(x, device_table, source="input"))
    results["host"] = loop(lambda x: constmem.frobulate(x, host_table, source="host"))
    results["attr"] = loop(lambda x: constmem.frobulate(x, table, source="attr"))
    return results


def throughput(device, table, elements, calls):
    with tf.device(device):
        x = tf.constant(np.random.default_rng(1).standard_normal(elements).astype(np.float32))
        device_table = tf.constant(table)
    with tf.device("/CPU:0"):
        host_table = tf.constant(table)
    steps = {
        "input": tf.function(lambda x: constmem.frobulate(x, device_table, source="input")),
        "host": tf.function(lambda x: constmem.frobulate(x, host_table, source="host")),
        "attr": tf.function(lambda x: constmem.frobulate(x, table, source="attr")),
    }
    results = {}
    for source, step in steps.items():
        def call(step=step):
            with tf.device(device):
                out = None
                for _ in range(calls):
                    out = step(x)
                out[0].numpy()

        results[source] = elements / (median_seconds(call) / calls)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json")
    parser.add_argument("--kernel-json", help="kernel_bench's JSON, for the TF/kernel ratio")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    gpu = bool(tf.config.list_logical_devices("GPU")) and not args.smoke
    device = "/GPU:0" if gpu else "/CPU:0"
    table = np.random.default_rng(2).integers(-100, 100, size=100, dtype=np.int32)
    iterations, big, calls = (2000, 64 << 20, 20) if gpu else (20, 1 << 12, 2)

    small = per_call_loop(device, table, iterations, 1024)
    print(f"device {device}; per op inside a tf.function loop, 1 Ki float32 elements, table of 100:")
    print(f"  tf.add            {small['tf.add'] * 1e6:8.2f} us")
    for source in SOURCES:
        print(f"  frobulate {source:<7} {small[source] * 1e6:8.2f} us  {small[source] / small['tf.add']:.3f}x tf.add")

    rates = throughput(device, table, big, calls)
    kernel_rate = None
    if args.kernel_json:
        with open(args.kernel_json) as f:
            kernel = json.load(f)
        kernel_rate = next(r["elements_per_s"] for r in kernel["frobulate"] if r["dtype"] == "float32" and r["table"] == 100)
    print(f"throughput at {big:,} float32 elements, table of 100:")
    for source in SOURCES:
        ratio = f"  {rates[source] / kernel_rate:.1%} of the kernel-level figure" if kernel_rate else ""
        print(f"  frobulate {source:<7} {rates[source] / 1e9:8.2f} G elements/s  {rates[source] * 8 / 1e9:7.0f} GB/s{ratio}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": device, "smoke": not gpu, "per_call_seconds": small,
                       "throughput_elements_per_s": rates, "kernel_elements_per_s": kernel_rate,
                       "elements": big}, f, indent=1)


if __name__ == "__main__":
    main()
