# SPDX-License-Identifier: Apache-2.0
"""Polyval and FirFilter on the CPU against what a user would otherwise call, in one run:
np.polyval and tf.math.polyval (degree 16, 4 Mi float32 elements), np.correlate row by row and
tf.nn.conv1d (17 and 63 taps, 256 rows of 16 Ki float32 samples, SAME). Medians of 5 timed calls
after a warm-up, all on TensorFlow's CPU device; prints each time and the speed-up.

  cpu_ops_bench.py [--json FILE] [--quick]
"""

import argparse
import json

import constmem.tensorflow as cm
import numpy as np
import tensorflow as tf
from timing import median_seconds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    parser.add_argument("--quick", action="store_true", help="a quarter of the sizes")
    args = parser.parse_args()
    scale = 4 if args.quick else 1
    rng = np.random.default_rng(1)
    figures = {}
    with tf.device("/CPU:0"):
        x = rng.uniform(-1, 1, (4 << 20) // scale).astype(np.float32)
        coeffs = (1 / np.arange(2, 19)).astype(np.float32)
        xt = tf.constant(x)
        constants = [tf.constant(c) for c in coeffs]
        polyval_graph = tf.function(lambda v: tf.math.polyval(constants, v))
        figures["polyval_16"] = {
            "constmem": median_seconds(lambda: cm.polyval(coeffs, xt).numpy()),
            "np.polyval": median_seconds(lambda: np.polyval(coeffs, x)),
            "tf.math.polyval": median_seconds(lambda: polyval_graph(xt).numpy()),
        }
        rows = rng.standard_normal((256 // scale, 16384)).astype(np.float32)
        rows_t = tf.constant(rows)
        for k in (17, 63):
            taps = rng.standard_normal(k).astype(np.float32)
            pad = (k - 1) // 2
            padded = np.pad(rows, [(0, 0), (pad, k - 1 - pad)])
            filters = tf.constant(taps[:, None, None])
            conv = tf.function(lambda v, f=filters: tf.nn.conv1d(v[:, :, None], f, 1, "SAME"))
            figures[f"fir_filter_{k}"] = {
                "constmem": median_seconds(lambda taps=taps: cm.fir_filter(rows_t, taps).numpy()),
                "np.correlate": median_seconds(
                    lambda t=taps, p=padded: [np.correlate(r, t, "valid") for r in p]
                ),
                "tf.nn.conv1d": median_seconds(lambda conv=conv: conv(rows_t).numpy()),
            }
    for case, times in figures.items():
        ours = times["constmem"]
        others = ", ".join(
            f"{name} {seconds * 1e3:.2f} ms ({seconds / ours:.1f}x)"
            for name, seconds in times.items()
            if name != "constmem"
        )
        print(f"{case}: constmem {ours * 1e3:.2f} ms; {others}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "threads": tf.config.threading.get_intra_op_parallelism_threads(),
                    "seconds": figures,
                },
                f,
                indent=1,
            )


if __name__ == "__main__":
    main()
