# SPDX-License-Identifier: Apache-2.0
"""Wall-clock timing shared by the Python benchmarks."""

import statistics
import time


def median_seconds(fn, repetitions=5):
    """Median wall time of `fn()` over `repetitions` calls, after one untimed warm-up call
    (tracing, kernel load, first upload)."""
    fn()
    times = []
    for _ in range(repetitions):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def cuda_event_ms(fn, repetitions=15, batch=10, warmup=5):
    """Median over `repetitions` of the GPU time per call of `batch` back-to-back calls on the
    current stream (CUDA events around the batch, so that the host's time to reach the first
    launch is not counted, as in the C++ benchmarks), after `warmup` calls."""
    import torch

    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repetitions):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(batch):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / batch)
    return statistics.median(times)


def alternating_ratios(fn, baseline, synchronize=lambda: None, rounds=60, calls=200, warmup=300):
    """Median and minimum over `rounds` of (wall time of `calls` calls of fn) / (the same of
    baseline), the two alternating round by round (host timings swing between runs on a shared
    machine; alternating in one run keeps the ratio), and each one's median microseconds a call.
    `synchronize()` waits for the work the calls queued (a GPU's) before each clock reading."""
    for _ in range(warmup):
        fn()
        baseline()
    synchronize()
    ratios, ours, theirs = [], [], []
    for _ in range(rounds):
        times = []
        for f in (fn, baseline):
            start = time.perf_counter()
            for _ in range(calls):
                f()
            synchronize()
            times.append((time.perf_counter() - start) / calls * 1e6)
        ours.append(times[0])
        theirs.append(times[1])
        ratios.append(times[0] / times[1])
    return {
        "ratio_median": statistics.median(ratios),
        "ratio_min": min(ratios),
        "constmem_us": statistics.median(ours),
        "baseline_us": statistics.median(theirs),
    }


def ratio_line(case, measured, baseline):
    """One line of alternating_ratios' result: the case, both times a call and the ratios."""
    return (
        f"{case} {measured['constmem_us']:7.2f} us, {baseline} {measured['baseline_us']:6.2f} us: "
        f"{measured['ratio_median']:.2f}x (min {measured['ratio_min']:.2f}x)"
    )


def cpu_model():
    """The CPU's model name from /proc/cpuinfo, or "unknown"."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"
