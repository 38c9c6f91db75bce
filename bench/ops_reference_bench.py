# SPDX-License-Identifier: Apache-2.0
"""Polyval and FirFilter against what a user would otherwise call, on one GPU, in one run:

- FirFilter (17 and 63 taps, [4096, 16384] float32, SAME) against torch.nn.functional.conv1d
  (cuDNN) and cupyx.scipy.ndimage.correlate1d;
- Polyval (degree 16, 16 Mi float32) against tf.math.polyval (eager, in a tf.function, and
  compiled by XLA);
- each constmem op in a tf.function and the same compiled by XLA (jit_compile=True), where the
  op library has the XLA lowering.

Each library runs in a process of its own (`--library`), since TensorFlow, PyTorch and CuPy each
bring their own CUDA libraries; `--library all` runs the three and prints the ratios.

  ops_reference_bench.py [--library all|constmem|torch|cupy] [--json FILE]

Times are medians of 20 timed calls after a warm-up, with CUDA events for PyTorch and CuPy and a
device sync around TensorFlow's calls (each call is at least tens of microseconds of kernel).
"""

import argparse
import json
import statistics
import subprocess
import sys

import numpy as np

ROWS, LENGTH = 4096, 16384
TAPS = (17, 63)
POLYVAL_ELEMENTS = 16 << 20
DEGREE = 16
REPETITIONS = 20


def taps_for(k):
    return (np.arange(1, k + 1, dtype=np.float32) / k).astype(np.float32)


def event_median_ms(record_start, record_stop, elapsed, run):
    run()
    times = []
    for _ in range(REPETITIONS):
        start, stop = record_start(), None
        run()
        stop = record_stop()
        times.append(elapsed(start, stop))
    return statistics.median(times)


def measure_torch():
    import torch

    torch.backends.cudnn.benchmark = True
    x = torch.randn(ROWS, 1, LENGTH, device="cuda")
    figures = {}
    for k in TAPS:
        w = torch.from_numpy(taps_for(k)).cuda().view(1, 1, k)

        def run(w=w):
            torch.nn.functional.conv1d(x, w, padding="same")

        def record():
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event

        def elapsed(start, stop):
            stop.synchronize()
            return start.elapsed_time(stop)

        figures[f"fir_filter_{k}"] = event_median_ms(record, record, elapsed, run)
    return {
        "library": f"torch {torch.__version__} (cuDNN {torch.backends.cudnn.version()})",
        "ms": figures,
    }


def measure_cupy():
    import cupy
    import cupyx.scipy.ndimage

    x = cupy.random.standard_normal((ROWS, LENGTH), dtype=cupy.float32)
    figures = {}
    for k in TAPS:
        w = cupy.asarray(taps_for(k))

        def run(w=w):
            cupyx.scipy.ndimage.correlate1d(x, w, axis=-1, mode="constant", cval=0.0)

        def record():
            event = cupy.cuda.Event()
            event.record()
            return event

        def elapsed(start, stop):
            stop.synchronize()
            return cupy.cuda.get_elapsed_time(start, stop)

        figures[f"fir_filter_{k}"] = event_median_ms(record, record, elapsed, run)
    return {"library": f"cupy {cupy.__version__}", "ms": figures}


def measure_constmem():
    import constmem.tensorflow as cm
    import tensorflow as tf
    from timing import median_seconds

    def median_ms(fn):
        """Per call, with a device sync so that the kernel has run."""
        synced = lambda: (fn(), tf.test.experimental.sync_devices())  # noqa: E731
        return 1e3 * median_seconds(synced, REPETITIONS)

    xla = cm.build_info().get("xla_lowering", False)

    def graph_and_xla(name, fn, *args):
        """`fn` in a tf.function, and compiled by XLA: name_graph, name_xla."""
        graph = tf.function(fn)
        figures[f"{name}_graph"] = median_ms(lambda: graph(*args))
        if xla:
            compiled = tf.function(fn, jit_compile=True)
            figures[f"{name}_xla"] = median_ms(lambda: compiled(*args))

    figures = {}
    with tf.device("/GPU:0"):
        x = tf.random.normal([ROWS, LENGTH])
        for k in TAPS:
            taps = taps_for(k)
            figures[f"fir_filter_{k}"] = median_ms(lambda taps=taps: cm.fir_filter(x, taps))
            graph_and_xla(f"fir_filter_{k}", lambda v, taps=taps: cm.fir_filter(v, taps), x)
        data = tf.random.uniform([POLYVAL_ELEMENTS], -1, 1)
        coeffs = (1 / np.arange(2, DEGREE + 3)).astype(np.float32)
        constants = [tf.constant(c) for c in coeffs]
        figures["polyval_16"] = median_ms(lambda: cm.polyval(coeffs, data))
        graph_and_xla("polyval_16", lambda d: cm.polyval(coeffs, d), data)
        figures["tf.math.polyval_16"] = median_ms(lambda: tf.math.polyval(constants, data))
        polyval_graph = tf.function(lambda d: tf.math.polyval(constants, d))
        figures["tf.math.polyval_16_tf_function"] = median_ms(lambda: polyval_graph(data))
        polyval_xla = tf.function(lambda d: tf.math.polyval(constants, d), jit_compile=True)
        figures["tf.math.polyval_16_xla"] = median_ms(lambda: polyval_xla(data))
        table = np.arange(-50, 50, dtype=np.int32)
        graph_and_xla("frobulate_100", lambda d: cm.frobulate(d, table), data)
    return {"library": f"constmem with tensorflow {tf.__version__}", "ms": figures}


MEASURE = {"constmem": measure_constmem, "torch": measure_torch, "cupy": measure_cupy}


def run_all(json_path):
    results = {}
    for library in MEASURE:
        done = subprocess.run(
            [sys.executable, __file__, "--library", library],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            print(f"{library}: failed\n{done.stderr[-2000:]}")
            continue
        results[library] = json.loads(done.stdout.strip().splitlines()[-1])
    ours = results.get("constmem", {}).get("ms", {})
    ratios = {}
    for k in TAPS:
        key = f"fir_filter_{k}"
        others = {lib: r["ms"][key] for lib, r in results.items() if lib != "constmem"}
        if key in ours and others:
            best = min(others, key=others.get)
            ratios[key] = {
                "constmem_ms": ours[key],
                "best_other": best,
                "best_other_ms": others[best],
                "speedup": others[best] / ours[key],
            }
            print(
                f"FirFilter {k} taps: constmem {ours[key]:.3f} ms, "
                + ", ".join(f"{lib} {ms:.3f} ms" for lib, ms in others.items())
                + f": {others[best] / ours[key]:.2f}x the faster"
            )
    for name in ("fir_filter_17", "fir_filter_63", "polyval_16", "frobulate_100"):
        if f"{name}_xla" in ours:
            ratios[f"{name}_xla_over_graph"] = ours[f"{name}_xla"] / ours[f"{name}_graph"]
            print(
                f"{name}: in a tf.function {ours[f'{name}_graph']:.3f} ms, compiled by XLA "
                f"{ours[f'{name}_xla']:.3f} ms"
            )
    if "polyval_16" in ours:
        for variant in (
            "tf.math.polyval_16",
            "tf.math.polyval_16_tf_function",
            "tf.math.polyval_16_xla",
        ):
            ratios[variant] = ours[variant] / ours["polyval_16"]
            print(
                f"Polyval degree 16: constmem {ours['polyval_16']:.3f} ms, {variant} "
                f"{ours[variant]:.3f} ms: {ratios[variant]:.1f}x faster"
            )
    summary = {"results": results, "ratios": ratios}
    if json_path:
        with open(json_path, "w") as f:
            json.dump(summary, f, indent=1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--library", default="all", choices=["all", *MEASURE])
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.library == "all":
        run_all(args.json)
    else:
        print(json.dumps(MEASURE[args.library]()))


if __name__ == "__main__":
    main()
