"""Where TensorFlow spends the time of one small Frobulate call: per-op cost inside a tf.function
for each table source and for tf.add, with the loop written three ways (a while loop over a
captured table, a while loop whose table is a constant made inside the body, and 200 unrolled
calls). Prints one line per variant; see docs/performance.md."""

import statistics
import time

import numpy as np
import tensorflow as tf

import constmem

ITERATIONS = 200


def timed(fn):
    fn()
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) / ITERATIONS * 1e6


def main():
    device = "/GPU:0" if tf.config.list_logical_devices("GPU") else "/CPU:0"
    table = np.random.default_rng(2).integers(-100, 100, size=100, dtype=np.int32)
    with tf.device(device):
        x0 = tf.constant(np.ones(1024, np.float32))
        one = tf.constant(np.float32(1))
        device_table = tf.constant(table)
    with tf.device("/CPU:0"):
        host_table = tf.constant(table)

    ops = {
        "tf.add": lambda x, t: x + one,
        "input": lambda x, t: constmem.frobulate(x, t, source="input"),
        "host": lambda x, t: constmem.frobulate(x, t, source="host"),
        "attr": lambda x, t: constmem.frobulate(x, table, source="attr"),
    }
    print(f"device {device}; microseconds per op, 1 Ki float32 elements, table of 100")
    print(f"{'op':<8} {'while, captured':>16} {'while, const in body':>21} {'unrolled':>9}")
    for name, op in ops.items():
        captured = host_table if name == "host" else device_table

        @tf.function
        def loop_captured(x):
            for _ in tf.range(ITERATIONS):
                x = op(x, captured)
            return x

        @tf.function
        def loop_const(x):
            for _ in tf.range(ITERATIONS):
                x = op(x, tf.constant(table))
            return x

        @tf.function(autograph=False)
        def unrolled(x):
            t = tf.constant(table)
            for _ in range(ITERATIONS):
                x = op(x, t)
            return x

        with tf.device(device):
            row = [timed(lambda f=f: f(x0)[0].numpy()) for f in (loop_captured, loop_const, unrolled)]
        print(f"{name:<8} {row[0]:16.2f} {row[1]:21.2f} {row[2]:9.2f}")


if __name__ == "__main__":
    main()
