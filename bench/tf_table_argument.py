# SPDX-License-Identifier: Apache-2.0
"""What it costs, per call of a tf.function, to hand Frobulate's input form a table that is in
device memory, by where the table comes from (1 Ki float32 elements, 100 entries, 200 calls queued
and read back once, after a warm-up):
- an eager int32 GPU tensor passed as an argument (TensorFlow keeps int32 function arguments on a
  GPU in host memory, so it crosses devices);
- float coefficients passed as an argument and rounded to int32 inside the function by a GPU op;
- the same int32 argument given to the host form;
- the input form called eagerly, no function.
Without a GPU it runs on the CPU, where the figures mean nothing."""

import time

import constmem.tensorflow as cm
import numpy as np
import tensorflow as tf


def seconds_per_call(fn, calls=200):
    fn().numpy()
    start = time.perf_counter()
    for _ in range(calls):
        out = fn()
    out.numpy()
    return (time.perf_counter() - start) / calls


def main():
    device = "/GPU:0" if tf.config.list_logical_devices("GPU") else "/CPU:0"
    table = np.arange(-50, 50, dtype=np.int32)
    with tf.device(device):
        x = tf.constant(np.ones(1024, np.float32))
        int32_table = tf.constant(table)
        coefficients = tf.constant(table.astype(np.float32))
        as_argument = tf.function(lambda x, t: cm.frobulate(x, t, source="input"))
        cast_inside = tf.function(
            lambda x, c: cm.frobulate(x, tf.cast(c, tf.int32), source="input")
        )
        host_form = tf.function(lambda x, t: cm.frobulate(x, t, source="host"))
        cases = {
            "input form, int32 GPU tensor as argument": lambda: as_argument(x, int32_table),
            "input form, table cast inside the function": lambda: cast_inside(x, coefficients),
            "host form, int32 GPU tensor as argument": lambda: host_form(x, int32_table),
            "input form, eager": lambda: cm.frobulate(x, int32_table, source="input"),
        }
        print(f"device {device}; the eager table tensor is on {int32_table.device}")
        for name, fn in cases.items():
            print(f"  {name:<46} {seconds_per_call(fn) * 1e6:8.1f} us per call")


if __name__ == "__main__":
    main()
