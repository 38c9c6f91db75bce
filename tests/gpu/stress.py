# SPDX-License-Identifier: Apache-2.0
"""The TensorFlow-level stress: a million checked op executions across logical GPUs.

The first GPU is split into logical GPUs, whose streams share its constant banks (the hazard the
protection guards against); any further GPU joins as it is. Several threads per logical device
call a tf.function of many Frobulate ops with random table lengths (1 to 16,384), all three
sources (attr nodes with distinct tables used in turn), and data of every shape class (0-d, empty,
odd sizes). Every output is checked against an exact reference; process RSS and TensorFlow's GPU
memory are sampled to show they stay flat.
  --expect clean       exit 0 only with zero mismatches (the protected build)
  --expect mismatches  exit 0 only if mismatches appear (hazard tracking off)
Prints one RESULT line.
"""

import argparse
import os
import sys
import threading
import time

import numpy as np
import tensorflow as tf

SHAPES = [(), (0,), (7,), (3, 5, 7), (1031,), (4099,), (65537,)]
# Attr tables baked into the function: distinct lengths, so that their nodes use bank runs of
# different sizes, alternating with the input tables.
ATTR_LENGTHS = [1, 100, 1025, 4097, 9000, 16384]


def rss_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--expect", choices=["clean", "mismatches"], default="clean")
    parser.add_argument("--executions", type=int, default=1_000_000, help="checked op executions")
    parser.add_argument(
        "--logical-devices", type=int, default=3, help="logical devices made of the first device"
    )
    parser.add_argument("--threads-per-device", type=int, default=4)
    parser.add_argument("--ops-per-call", type=int, default=96)
    parser.add_argument(
        "--device-type",
        choices=["GPU", "CPU"],
        default="GPU",
        help="CPU runs the same checks on logical CPUs (a smoke test of the script)",
    )
    args = parser.parse_args()

    kind = args.device_type
    physical = tf.config.list_physical_devices(kind)
    if not physical:
        print(f"RESULT skipped: no {kind}")
        return 0
    # Always split the first device: with one stream per physical GPU the hazard-off build would
    # show no mismatches, and the check would prove nothing.
    config = tf.config.LogicalDeviceConfiguration(memory_limit=4096 if kind == "GPU" else None)
    tf.config.set_logical_device_configuration(physical[0], [config] * args.logical_devices)
    logical = tf.config.list_logical_devices(kind)

    import constmem.tensorflow as cm  # after the device configuration, before the GPU starts

    rng = np.random.default_rng(2024)
    # Quarters below 2^8 and entries in [-50, 50]: every partial sum is exact in float32, so the
    # reference is data + sum(table) with no rounding to model.
    inputs = [(rng.integers(-1024, 1024, size=shape) / 4).astype(np.float32) for shape in SHAPES]
    attr_tables = [rng.integers(-50, 51, size=n, dtype=np.int32) for n in ATTR_LENGTHS]
    sources = ("input", "host", "attr")
    ops = args.ops_per_call

    @tf.function(input_signature=[tf.TensorSpec([None], tf.int32)] * ops)
    def step(*tables):
        outs = []
        for k in range(ops):
            source = sources[k % 3]
            table = attr_tables[(k // 3) % len(attr_tables)] if source == "attr" else tables[k]
            outs.append(cm.frobulate(tf.constant(inputs[k % len(SHAPES)]), table, source=source))
        return outs

    def gpu_memory():
        if kind != "GPU":
            return 0
        return tf.config.experimental.get_memory_info(logical[0].name.replace("/device:", ""))[
            "current"
        ]

    calls_per_thread = -(-args.executions // (ops * args.threads_per_device * len(logical)))
    start = time.time()
    counts = {"checked": 0, "mismatching": 0}
    samples = []
    lock = threading.Lock()
    errors = []

    def expected_for(k, tables):
        table = attr_tables[(k // 3) % len(attr_tables)] if sources[k % 3] == "attr" else tables[k]
        return inputs[k % len(SHAPES)] + np.float32(np.sum(table, dtype=np.int64))

    def worker(device_name, seed):
        try:
            local = np.random.default_rng(seed)
            with tf.device(device_name):
                for call in range(calls_per_thread):
                    lengths = local.integers(1, 16385, size=ops)
                    lengths[local.random(ops) < 0.3] = local.integers(1, 1025)  # by-value sizes too
                    tables = [local.integers(-50, 51, size=n, dtype=np.int32) for n in lengths]
                    outs = step(*[tf.constant(t) for t in tables])
                    bad = sum(
                        int(not np.array_equal(out.numpy(), expected_for(k, tables)))
                        for k, out in enumerate(outs)
                    )
                    with lock:
                        counts["checked"] += ops
                        counts["mismatching"] += bad
                        if call % max(1, calls_per_thread // 10) == 0:
                            samples.append((counts["checked"], rss_bytes(), gpu_memory()))
                            # Progress, so that a run cut short shows its rate and memory then.
                            elapsed = time.time() - start
                            print(
                                f"[stress] {counts['checked']} checked, "
                                f"{counts['mismatching']} mismatching, "
                                f"{counts['checked'] / max(elapsed, 1e-9):.0f}/s, "
                                f"rss {samples[-1][1] / 2**20:.0f} MiB, "
                                f"gpu {samples[-1][2] / 2**20:.0f} MiB",
                                flush=True,
                            )
        except Exception as error:  # reported below; a crash must not look like a pass
            errors.append(repr(error)[:500])

    threads = [
        threading.Thread(target=worker, args=(d.name, 1000 * i + j))
        for i, d in enumerate(logical)
        for j in range(args.threads_per_device)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.time() - start
    samples.sort()
    # Flat: from the first tenth of the run to the end, RSS and TensorFlow's GPU memory in use each
    # grow by less than 64 MiB (a leak of one table or staging buffer per call would pass that).
    warm = [s for s in samples if s[0] >= counts["checked"] // 10] or samples
    rss_growth = (samples[-1][1] - warm[0][1]) if samples else 0
    gpu_growth = (samples[-1][2] - warm[0][2]) if samples else 0
    mode = os.environ.get("TF_GPU_THREAD_MODE", "global")
    library = os.path.basename(os.environ.get("CONSTMEM_TENSORFLOW_LIBRARY", "_constmem_ops.so"))
    flat = rss_growth < 64 * 2**20 and gpu_growth < 64 * 2**20
    print(
        f"RESULT stress logical_gpus={len(logical)} thread_mode={mode} library={library} "
        f"threads={len(threads)} executions_checked={counts['checked']} "
        f"mismatching={counts['mismatching']} errors={len(errors)} seconds={seconds:.1f} "
        f"rss_growth_mib={rss_growth / 2**20:.1f} gpu_growth_mib={gpu_growth / 2**20:.1f} "
        f"memory_flat={flat}"
    )
    for error in errors[:3]:
        print("error:", error)
    if errors or counts["checked"] < args.executions:
        return 1
    if args.expect == "clean":
        return 0 if counts["mismatching"] == 0 and flat else 1
    return 0 if counts["mismatching"] > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
