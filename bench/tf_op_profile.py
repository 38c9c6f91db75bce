# SPDX-License-Identifier: Apache-2.0
"""Where the host time of one small op goes inside TensorFlow: runs 200 unrolled calls of `tf.add`
and of Frobulate (attr form, 1 Ki float32 elements, table of 100) under TensorFlow's profiler with
host tracing only, and prints, per traced activity, how many times it ran and its mean duration.

  tf_op_profile.py [--calls N] [--top N]
Needs no CUPTI (device tracing is off). A diagnostic, not a benchmark: tracing adds its own cost.
"""

import argparse
import collections
import glob
import os
import tempfile

import constmem.tensorflow as cm
import numpy as np
import tensorflow as tf
from tensorflow.tsl.profiler.protobuf import xplane_pb2


def host_events(logdir):
    """(name, duration in ns) of every event on the host planes of the newest trace."""
    paths = sorted(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True))
    space = xplane_pb2.XSpace()
    with open(paths[-1], "rb") as f:
        space.ParseFromString(f.read())
    for plane in space.planes:
        if not plane.name.startswith("/host"):
            continue
        for line in plane.lines:
            for event in line.events:
                yield plane.event_metadata[event.metadata_id].name, event.duration_ps / 1000


def profile(fn, logdir):
    fn()  # warm-up outside the trace
    options = tf.profiler.experimental.ProfilerOptions(
        host_tracer_level=3, device_tracer_level=0, python_tracer_level=0
    )
    tf.profiler.experimental.start(logdir, options=options)
    fn()
    tf.profiler.experimental.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    # Grappler's arithmetic optimizer would fold the chain of tf.add calls into one or two ops.
    tf.config.optimizer.set_experimental_options({"arithmetic_optimization": False})
    device = "/GPU:0" if tf.config.list_logical_devices("GPU") else "/CPU:0"
    table = np.random.default_rng(2).integers(-100, 100, size=100, dtype=np.int32)
    with tf.device(device):
        x0 = tf.constant(np.ones(1024, np.float32))
        addend = tf.constant(np.float32(0.5))
    ops = {
        "tf.add": lambda x: x + addend,
        "frobulate attr": lambda x: cm.frobulate(x, table, source="attr"),
    }
    print(f"device {device}; {args.calls} unrolled calls; host events by mean duration")
    for name, op in ops.items():

        @tf.function(autograph=False)
        def unrolled(x, op=op):
            for _ in range(args.calls):
                x = op(x)
            return x

        def run(fn=unrolled):
            with tf.device(device):
                fn(x0).numpy()

        with tempfile.TemporaryDirectory() as logdir:
            profile(run, logdir)
            stats = collections.defaultdict(list)
            for event, ns in host_events(logdir):
                # Op kernels are traced as "node_name:OpType"; group them by type.
                op_kernel = ":" in event and "::" not in event and ": " not in event
                stats[event.rsplit(":", 1)[-1] if op_kernel else event].append(ns)
        print(f"\n== {name}")
        print(f"  {'count':>6} {'mean us':>9} {'total us':>10}  event")
        rows = sorted(stats.items(), key=lambda kv: -sum(kv[1]))
        for event, durations in rows[: args.top]:
            total = sum(durations)
            print(
                f"  {len(durations):6d} {total / len(durations) / 1e3:9.2f} "
                f"{total / 1e3:10.1f}  {event[:90]}"
            )


if __name__ == "__main__":
    main()
