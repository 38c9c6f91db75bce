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
