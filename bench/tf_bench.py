# SPDX-License-Identifier: Apache-2.0
"""TensorFlow-level figures for each way the table arrives (device input, host input, attr):

1. per call on 1 Ki float32 elements with a 100-entry table against `tf.add` on the same tensor,
   inside one tf.function, in a `tf.range` while loop and in straight-line (unrolled) code;
2. throughput on 64 Mi elements (chained calls inside one tf.function; steady state per op, and
   over a whole function call) against the kernel-level figure of the same placement, read from
   kernel_bench's JSON.

  tf_bench.py [--json FILE] [--kernel-json FILE] [--smoke]
Times are medians of 5 timed repetitions after a warm-up. Without a GPU (or with --smoke) it runs
tiny sizes on the CPU to show the script works; those figures mean nothing.

How each table is made, so that it arrives the way its form promises:
- attr: a NumPy array, baked into the node.
- host: `tf.constant` in the function: TensorFlow keeps int32 constants in host memory.
- input: a device-memory int32 tensor. TensorFlow keeps int32 tensors that its own GPU kernels
  produce, and int32 loop variables, in host memory, so the table travels as float32 bits and a
  `tf.bitcast` (no kernel, no copy) turns it back into int32 in device memory. In the while loop
  the bitcast runs in the loop body: a loop-invariant int32 would be moved to host memory. So the
  while loop also times "tf.add+bitcast", a tf.add whose addend passes through the same kind of
  bitcast in the body: the input form is compared against it too, like for like.
- tf.add adds a float32 tensor argument, and grappler's arithmetic optimizer is off: otherwise it
  folds a straight-line chain of adds into one or two ops (AddN, then a multiply), even with a
  tensor addend.
"""

import argparse
import json
import statistics
import time

import constmem.tensorflow as cm
import numpy as np
import tensorflow as tf
from timing import median_seconds

SOURCES = ("input", "host", "attr")
ROUNDS = 11  # per_call: rounds in which the ops take turns


def steps(table):
    """One step per op: (x, addend, table_bits) -> new x."""
    return {
        "tf.add": lambda x, addend, bits: x + addend,
        "tf.add+bitcast": lambda x, addend, bits: x + tf.bitcast(addend, tf.float32),
        "input": lambda x, addend, bits: cm.frobulate(
            x, tf.bitcast(bits, tf.int32), source="input"
        ),
        "host": lambda x, addend, bits: cm.frobulate(x, tf.constant(table), source="host"),
        "attr": lambda x, addend, bits: cm.frobulate(x, table, source="attr"),
    }


def per_call(device, table, elements, iterations, unrolled_calls, rounds=ROUNDS):
    """Seconds per op in a while loop and in straight-line code; each call depends on the last.
    The ops take turns, one timed call each per round, so that drift in the machine's speed falls
    on all of them alike; per op the median over rounds, and against tf.add the median of the
    per-round ratios. Straight-line code needs no tf.add+bitcast: there the input form's bitcast
    runs once, before the calls."""
    with tf.device(device):
        x0 = tf.constant(np.random.default_rng(0).standard_normal(elements).astype(np.float32))
        addend = tf.constant(np.float32(0.5))
        bits = tf.constant(table.view(np.float32))
    runs = {}  # (shape, op) -> (run, calls)
    for name, step in steps(table).items():

        @tf.function
        def while_loop(x, addend, bits, step=step):
            for _ in tf.range(iterations):
                x = step(x, addend, bits)
            return x

        @tf.function(autograph=False)
        def unrolled(x, addend, bits, name=name, step=step):
            if name == "input":
                device_table = tf.bitcast(bits, tf.int32)  # stays in device memory
                call = lambda x: cm.frobulate(x, device_table, source="input")  # noqa: E731
            else:
                call = lambda x: step(x, addend, bits)  # noqa: E731
            for _ in range(unrolled_calls):
                x = call(x)
            return x

        shapes = [("while", while_loop, iterations)]
        if name != "tf.add+bitcast":
            shapes.append(("unrolled", unrolled, unrolled_calls))
        for shape, fn, calls in shapes:

            def run(fn=fn):
                with tf.device(device):
                    fn(x0, addend, bits)[0].numpy()

            run()  # warm-up: tracing, kernel load
            runs[shape, name] = (run, calls)
    samples = {key: [] for key in runs}
    for _ in range(rounds):
        for key, (run, calls) in runs.items():
            start = time.perf_counter()
            run()
            samples[key].append((time.perf_counter() - start) / calls)
    seconds = {"while": {}, "unrolled": {}}
    ratios = {"while": {}, "unrolled": {}}
    for (shape, name), values in samples.items():
        seconds[shape][name] = statistics.median(values)
        baseline = samples[shape, "tf.add"]
        ratios[shape][name] = statistics.median(
            v / b for v, b in zip(values, baseline, strict=True)
        )
    like_for_like = statistics.median(
        v / b
        for v, b in zip(samples["while", "input"], samples["while", "tf.add+bitcast"], strict=True)
    )
    return seconds, ratios, like_for_like


def throughput(device, table, elements, calls, queued_calls=5):
    """Elements per second of chained calls inside one tf.function, three ways:
    - whole: one function call of `calls` ops, then its result read back, as a single step would;
    - queued: `queued_calls` function calls, each taking the last one's output, read back once, as
      a training loop runs (the host dispatches the next call while the GPU runs this one);
    - steady: per op, from the difference between 3 x `calls` and `calls` ops, which takes out
      what a function call costs once (dispatch, the first output allocation, reading back).
    tf.add is measured the same way, to show what the function call costs any op."""
    with tf.device(device):
        x0 = tf.constant(np.random.default_rng(1).standard_normal(elements).astype(np.float32))
        addend = tf.constant(np.float32(0.5))
        bits = tf.constant(table.view(np.float32))
    rates = {"whole": {}, "queued": {}, "steady": {}}
    for name in ("tf.add", *SOURCES):
        step = steps(table)[name]
        seconds = {}
        for count in (calls, 3 * calls):

            @tf.function(autograph=False)
            def chained(x, addend, bits, count=count, step=step):
                for _ in range(count):
                    x = step(x, addend, bits)
                return x

            def run(fn=chained):
                with tf.device(device):
                    fn(x0, addend, bits)[0].numpy()

            seconds[count] = median_seconds(run)
            if count == calls:

                def run_queued(fn=chained):
                    with tf.device(device):
                        x = x0
                        for _ in range(queued_calls):
                            x = fn(x, addend, bits)
                        x[0].numpy()

                seconds["queued"] = median_seconds(run_queued)
        rates["whole"][name] = elements * calls / seconds[calls]
        rates["queued"][name] = elements * calls * queued_calls / seconds["queued"]
        rates["steady"][name] = elements * 2 * calls / (seconds[3 * calls] - seconds[calls])
    return rates


def empty_tensor_calls(device, table, calls):
    """Seconds per op on an empty tensor (no kernel launch at all), unrolled: TensorFlow's own cost
    of running the op, for telling it apart from the launch."""
    with tf.device(device):
        x0 = tf.constant(np.zeros(0, np.float32))
        addend = tf.constant(np.float32(0.5))
        bits = tf.constant(table.view(np.float32))
    results = {}
    for name in ("tf.add", "attr"):
        step = steps(table)[name]

        @tf.function(autograph=False)
        def unrolled(x, addend, bits, step=step):
            for _ in range(calls):
                x = step(x, addend, bits)
            return x

        def run(fn=unrolled):
            with tf.device(device):
                fn(x0, addend, bits).numpy()

        results[name] = median_seconds(run) / calls
    return results


def kernel_rates(path):
    """Kernel-level float32 elements/s at 100 entries, by placement."""
    with open(path) as f:
        kernel = json.load(f)
    return {
        r.get("placement", "constant_bank"): r["elements_per_s"]
        for r in kernel["frobulate"]
        if r["dtype"] == "float32" and r["table"] == 100
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json")
    parser.add_argument("--kernel-json", help="kernel_bench's JSON, for the TF/kernel ratio")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    tf.config.optimizer.set_experimental_options({"arithmetic_optimization": False})
    gpu = bool(tf.config.list_logical_devices("GPU")) and not args.smoke
    device = "/GPU:0" if gpu else "/CPU:0"
    table = np.random.default_rng(2).integers(-100, 100, size=100, dtype=np.int32)
    iterations, unrolled_calls, big, calls = (
        (2000, 200, 64 << 20, 20) if gpu else (20, 5, 1 << 12, 2)
    )

    small, small_ratios, like_for_like = per_call(device, table, 1024, iterations, unrolled_calls)
    print(f"device {device}; microseconds per op, 1 Ki float32 elements, table of 100")
    print(f"  {'op':<16} {'while loop':>11} {'vs tf.add':>10} {'unrolled':>10} {'vs tf.add':>10}")
    for name in ("tf.add", "tf.add+bitcast", *SOURCES):
        label = name if name.startswith("tf.") else f"frobulate {name}"
        cells = [
            f"{small[shape][name] * 1e6:11.2f} {small_ratios[shape][name]:9.3f}x"
            if name in small[shape]
            else ""
            for shape in ("while", "unrolled")
        ]
        print(f"  {label:<16} {cells[0]} {cells[1]}")
    print(
        f"  frobulate input in the while loop against tf.add+bitcast (both bodies hold a bitcast): "
        f"{like_for_like:.3f}x"
    )
    print(
        f"  (medians of {ROUNDS} rounds in which the ops take turns; "
        "ratios are medians of per-round ratios)"
    )
    empty = empty_tensor_calls(device, table, unrolled_calls)
    print(
        f"  on an empty tensor (no launch), unrolled: tf.add {empty['tf.add'] * 1e6:.2f} us, "
        f"frobulate attr {empty['attr'] * 1e6:.2f} us"
    )

    rates = throughput(device, table, big, calls)
    placement = {"input": "global_memory", "host": "by_value", "attr": "by_value"}
    kernel = kernel_rates(args.kernel_json) if args.kernel_json else {}
    kinds = {"steady": "steady, per op", "queued": "5 calls queued", "whole": "one call, read back"}
    print(
        f"throughput at {big:,} float32 elements, table of 100, "
        f"{calls} chained calls in one tf.function:"
    )
    print(f"  {'op':<17}" + "".join(f"{label:>26}" for label in kinds.values()))
    ratios = {}
    for name in ("tf.add", *SOURCES):
        reference = kernel.get(placement.get(name))
        cells = []
        for kind in kinds:
            rate = rates[kind][name]
            share = f" {rate / reference:6.1%}" if reference else " " * 7
            cells.append(f"{rate / 1e9:8.2f} G elem/s{share}")
        if reference:
            ratios[name] = {kind: rates[kind][name] / reference for kind in kinds}
        label = name if name == "tf.add" else f"frobulate {name}"
        print(f"  {label:<17}" + "".join(f"{cell:>26}" for cell in cells))
    if kernel:
        print(
            "  (shares are of the kernel-level figure for the same placement: "
            + ", ".join(f"{s} {placement[s]}" for s in SOURCES)
            + ")"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "device": device,
                    "smoke": not gpu,
                    "per_call_seconds": small,
                    "per_call_over_tf_add": small_ratios,
                    "input_while_over_tf_add_bitcast": like_for_like,
                    "empty_tensor_seconds": empty,
                    "elements_per_s": rates,
                    "kernel_elements_per_s": kernel,
                    "throughput_over_kernel": ratios,
                    "elements": big,
                    "calls": calls,
                },
                f,
                indent=1,
            )


if __name__ == "__main__":
    main()
