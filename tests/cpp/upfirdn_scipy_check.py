# SPDX-License-Identifier: Apache-2.0
"""Confirms upfirdn_cpu_test.cc's reference and output length against scipy.signal.upfirdn.

Not run by CI (scipy is not a test dependency): run it by hand where scipy is installed,

    python tests/cpp/upfirdn_scipy_check.py           # checks; exit status 1 on a mismatch
    python tests/cpp/upfirdn_scipy_check.py --emit    # prints the tables the C++ test embeds

It checks, for many (n, k, up, down): the length formula the C++ functor uses (((n - 1) * up + k
- 1) // down + 1) against scipy's _output_len, and the direct reference the C++ test uses (zero
insertion, full convolution, decimation) against scipy.signal.upfirdn, exactly on small integers.
"""

import itertools
import sys

import numpy as np
from scipy.signal import upfirdn
from scipy.signal._upfirdn import _output_len


def output_length(n, k, up, down):
    return ((n - 1) * up + k - 1) // down + 1


def direct(h, x, up, down):
    """What the C++ test's reference does: zero insertion, full convolution, decimation."""
    n, k = len(x), len(h)
    xup = np.zeros(max(n, 1) * up, dtype=object)
    xup[: n * up : up] = [int(v) for v in x]
    full = (
        [
            sum(int(h[j]) * xup[t - j] for j in range(k) if 0 <= t - j < n * up)
            for t in range((n - 1) * up + k)
        ]
        if n > 0
        else [0] * max(0, (n - 1) * up + k)
    )
    length = output_length(n, k, up, down)
    return [full[i * down] if i * down < len(full) else 0 for i in range(length)]


def cases():
    sizes = [0, 1, 2, 3, 7, 16, 31]
    taps = [1, 2, 3, 5, 8, 31, 61]
    rates = [
        (1, 1),
        (2, 2),
        (1, 3),
        (3, 1),
        (2, 1),
        (1, 2),
        (3, 2),
        (2, 3),
        (5, 4),
        (7, 11),
        (160, 147),
        (147, 160),
        (1024, 1),
        (1, 1024),
        (1024, 1023),
    ]
    for n, k, (up, down) in itertools.product(sizes, taps, rates):
        yield n, k, up, down


def main():
    emit = "--emit" in sys.argv
    bad = 0
    lengths = []
    for n, k, up, down in cases():
        expected = _output_len(k, n, up, down)
        got = output_length(n, k, up, down)
        lengths.append((n, k, up, down, expected))
        if got != expected:
            print(f"length: n={n} k={k} up={up} down={down}: scipy {expected}, ours {got}")
            bad += 1
        if expected < 0:
            continue
        rng = np.random.default_rng(n * 1000 + k)
        x = rng.integers(-9, 10, n)
        h = rng.integers(-9, 10, k)
        ours = direct(h, x, up, down)
        theirs = upfirdn(h.astype(np.float64), x.astype(np.float64), up, down)
        if len(ours) != len(theirs) or any(
            float(a) != b for a, b in zip(ours, theirs, strict=True)
        ):
            print(f"values: n={n} k={k} up={up} down={down}")
            bad += 1
    if emit:
        print("// {n, k, up, down, scipy's _output_len}")
        for row in lengths:
            print("{" + ", ".join(str(v) for v in row) + "},")
        # Small cases with their scipy outputs, for the test's reference.
        for n, k, up, down in [(5, 3, 2, 3), (4, 5, 3, 1), (6, 2, 1, 2), (3, 7, 5, 4)]:
            x = np.arange(1, n + 1, dtype=np.float64)
            h = np.arange(1, k + 1, dtype=np.float64) * np.array([1, -2] * k)[:k]
            y = upfirdn(h, x, up, down)
            print(f"// n={n} k={k} up={up} down={down}: x = 1..n, h = {h.tolist()}")
            print("{" + ", ".join(str(int(v)) for v in y) + "}")
    print(f"{len(lengths)} cases, {bad} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
