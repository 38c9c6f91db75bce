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
