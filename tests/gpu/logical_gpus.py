# SPDX-License-Identifier: Apache-2.0
"""Two logical GPUs on one physical GPU: two TensorFlow streams, one shared __constant__ symbol.

Threads on both logical devices run Frobulate concurrently, each with its own table uploaded from
device memory into the shared constant bank; every output is checked against NumPy.
  --expect clean       exit 0 only with zero mismatches (the protected build)
  --expect mismatches  exit 0 only if mismatches appear (the build with hazard tracking off,
                       which proves this stress can fail)
Run it again with TF_GPU_THREAD_MODE=gpu_private for TensorFlow's per-device threads. Prints one
RESULT line.
"""

import argparse
import os
import sys
import threading
import time

import numpy as np
import tensorflow as tf


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--expect", choices=["clean", "mismatches"], default="clean")
    parser.add_argument("--threads-per-device", type=int, default=4)
    parser.add_argument("--calls", type=int, default=300, help="per thread")
    parser.add_argument("--elements", type=int, default=1 << 20)
    parser.add_argument("--min-table", type=int, default=1500)
    parser.add_argument(
        "--max-table",
        type=int,
        default=12000,
        help="tables span 1 to 3 of the bank's 4 slots, so leases of the two streams overlap",
    )
    parser.add_argument(
        "--in-flight", type=int, default=4, help="calls a thread enqueues before checking"
    )
    args = parser.parse_args()

    physical = tf.config.list_physical_devices("GPU")
    if not physical:
        print("RESULT skipped: no GPU")
        return 0
    tf.config.set_logical_device_configuration(
        physical[0], [tf.config.LogicalDeviceConfiguration(memory_limit=8192)] * 2
    )
    logical = tf.config.list_logical_devices("GPU")
    assert len(logical) >= 2, logical

    import constmem.tensorflow as cm  # after the device configuration, before the GPU starts

    rng = np.random.default_rng(99)
    # Quarters below 2^8 and integer tables keep every partial sum exact in float32, so the
    # reference is data + sum(table) with no rounding to model.
    data = (rng.integers(-1024, 1024, size=args.elements) / 4).astype(np.float32)
    step = tf.function(lambda x, t: cm.frobulate(x, t, source="input"))
    mismatches = [0]
    checked = [0]
    lock = threading.Lock()
    errors = []

    def worker(device_name, seed):
        try:
            local = np.random.default_rng(seed)
            with tf.device(device_name):
                x = tf.constant(data)
                pending = []
                for i in range(args.calls):
                    size = int(local.integers(args.min_table, args.max_table + 1))
                    table = local.integers(-100, 100, size=size, dtype=np.int32)
                    pending.append((step(x, tf.constant(table)), table))
                    if len(pending) >= args.in_flight or i == args.calls - 1:
                        for out, used in pending:
                            expected = data + np.float32(np.sum(used, dtype=np.int64))
                            bad = int(np.count_nonzero(out.numpy() != expected))
                            with lock:
                                checked[0] += 1
                                mismatches[0] += bad > 0
                        pending = []
        except Exception as error:  # reported below; a crash must not look like a pass
            errors.append(repr(error))

    start = time.time()
    threads = [
        threading.Thread(target=worker, args=(d.name, 1000 * i + j))
        for i, d in enumerate(logical[:2])
        for j in range(args.threads_per_device)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.time() - start
    mode = os.environ.get("TF_GPU_THREAD_MODE", "global")
    library = os.path.basename(os.environ.get("CONSTMEM_TENSORFLOW_LIBRARY", "_constmem_ops.so"))
    print(
        f"RESULT logical_gpus=2 thread_mode={mode} library={library} threads={len(threads)} "
        f"calls_checked={checked[0]} mismatching_calls={mismatches[0]} errors={len(errors)} "
        f"seconds={seconds:.1f}"
    )
    for error in errors[:5]:
        print("error:", error)
    if errors or checked[0] != len(threads) * args.calls:
        return 1
    if args.expect == "clean":
        return 0 if mismatches[0] == 0 else 1
    return 0 if mismatches[0] > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
