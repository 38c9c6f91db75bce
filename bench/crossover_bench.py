# SPDX-License-Identifier: Apache-2.0
"""What a table costs just past each placement boundary, against the call just inside it.

For every op and every boundary its table can cross (the by-value parameter block, the constant
bank, the shared-memory staging, a kernel's tiled range), the same call with a table of the last
size inside and the first size outside, in each table form a PyTorch user has: a static table (a
Python list), a CPU tensor (a host table) and a CUDA tensor (a device table). Each call is timed as
a user sees it (CUDA events around back-to-back calls, so the host's work counts when it is the
longer), the two sizes alternating over rounds in one run; the ratio is outside / inside. The
launch boundary keeps the table and crosses the call's outputs over the op's small-launch size
(65,536; SeparableFilter's 2^23, FirFilter's 2^25), past which a device table is copied into the
bank (and a small host table read at divergent indices is staged from its parameter into shared
memory).

    python3 bench/crossover_bench.py [--json FILE] [--rounds N] [--launch-only] [--ops a,b]
"""

import argparse
import json
import statistics

import constmem.torch as cm
import torch
from timing import cuda_event_ms

# (op, boundary, table sizes inside and outside, table dtype, call(table)).
# Sizes: by value 4 KiB (1,024 float32 or int32 entries); constant banks: Frobulate 16,384 int32,
# Polyval 4,096, FirFilter 2,048 float32 taps (past which it also runs in chunks); Interpolate and
# Upfirdn stage up to 64 KiB of float32 in shared memory; SeparableFilter's fused kernel takes 127
# taps an axis.


def _cases(device):
    gen = torch.Generator(device="cpu").manual_seed(0)

    def rand(*shape):
        return torch.rand(*shape, generator=gen).to(device)

    # The sizes of the project's other benchmarks: 16 Mi elements (Polyval's), [4096, 16384]
    # (FirFilter's), 32 RGB 1080p images.
    elementwise = rand(16 << 20)
    rows = rand(4096, 16384)
    short_audio = rand(8, 480000)  # 8 clips of 10 s at 48 kHz: a long filter's call within 1 s
    images = rand(32, 3, 1080, 1920)
    return [
        (
            "frobulate",
            "by value",
            (1024, 1025),
            torch.int32,
            lambda t: cm.frobulate(elementwise, t),
        ),
        (
            "frobulate",
            "constant bank",
            (16384, 16385),
            torch.int32,
            lambda t: cm.frobulate(elementwise, t),
        ),
        ("polyval", "by value", (1024, 1025), torch.float32, lambda t: cm.polyval(t, elementwise)),
        (
            "polyval",
            "constant bank",
            (4096, 4097),
            torch.float32,
            lambda t: cm.polyval(t, elementwise),
        ),
        (
            "interpolate",
            "shared memory",
            (16384, 16385),
            torch.float32,
            lambda t: cm.interpolate(elementwise, t, lo=0.0, hi=1.0),
        ),
        ("fir_filter", "by value", (1024, 1025), torch.float32, lambda t: cm.fir_filter(rows, t)),
        (
            "fir_filter",
            "constant bank",
            (2048, 2049),
            torch.float32,
            lambda t: cm.fir_filter(rows, t),
        ),
        # Upfirdn stages its taps in shared memory up to 64 KiB; its tiled kernel stages a filter's
        # whole halo up to 2,048 terms a phase, past which it walks the terms in chunks of 2,048
        # (HaloTerms in ops/upfirdn/upfirdn_plan.h).
        (
            "upfirdn",
            "tiled kernel's whole halo, up 1",
            (2048, 2049),
            torch.float32,
            lambda t: cm.upfirdn(short_audio, t, up=1, down=1),
        ),
        (
            "upfirdn",
            "shared memory, up 2",
            (16384, 16385),
            torch.float32,
            lambda t: cm.upfirdn(short_audio, t, up=2, down=1),
        ),
        # Row and column taps, halves of one table: the longest the fused kernel's large tile
        # takes on an H200 (297 + 297 entries, float32 planes), and one more each.
        (
            "separable_filter",
            "fused kernel (large tile)",
            (594, 596),
            torch.float32,
            lambda t: cm.separable_filter(images, t[: _length(t) // 2], t[_length(t) // 2 :]),
        ),
    ]


def _small_launch_boundary(op, entries, source):
    """The most output elements a launch of `op` copies no `source` table of `entries` in: where
    the op's own placement rule (placement_of) stops reading it in place or by value."""

    def copies(elements):
        return cm.placement_of(
            op, entries, "float32", source, elements=elements
        ) != cm.placement_of(op, entries, "float32", source, elements=1)

    low, high = 1, 2
    while not copies(high):
        if high > 1 << 40:
            raise RuntimeError(f"{op}: no small-launch boundary (a library without GPU kernels?)")
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if copies(middle) else (middle, high)
    return low


def _launch_cases(device):
    """(op, table entries, table dtype, output elements inside and outside, call(elements, table)):
    the same table in calls whose outputs cross the op's own small-launch boundary (65,536
    outputs; SeparableFilter's 2^23, FirFilter's 2^25), past which a device table is copied into
    the bank and a small host table read at divergent indices is staged from its parameter instead
    of read there."""
    gen = torch.Generator(device="cpu").manual_seed(1)
    data = {}

    def vector(n):
        if n not in data:
            data[n] = torch.rand(n, generator=gen).to(device)
        return data[n]

    def sizes(op, entries, source="device"):
        boundary = _small_launch_boundary(op, entries, source)
        return boundary, boundary + 1

    width = 2048  # images of rows of 2,048 around SeparableFilter's boundary
    image_rows = _small_launch_boundary("separable_filter", 6, "device") // width
    images = {
        rows * width: torch.rand(1, 1, rows, width, generator=gen).to(device)
        for rows in (image_rows, image_rows + 1)
    }
    return [
        (
            "frobulate",
            2000,
            torch.int32,
            sizes("frobulate", 2000),
            lambda n, t: cm.frobulate(vector(n), t),
        ),
        (
            "polyval",
            1100,
            torch.float32,
            sizes("polyval", 1100),
            lambda n, t: cm.polyval(t, vector(n)),
        ),
        (
            "fir_filter",
            17,
            torch.float32,
            sizes("fir_filter", 17),
            lambda n, t: cm.fir_filter(vector(n).view(1, n), t),
        ),
        (
            "interpolate",
            16,
            torch.float32,
            sizes("interpolate", 16, "host"),
            lambda n, t: cm.interpolate(vector(n), t, lo=0.0, hi=1.0),
        ),
        (
            "separable_filter",
            6,
            torch.float32,
            tuple(images),
            lambda n, t: cm.separable_filter(images[n], t[:3], t[3:]),
        ),
    ]


def _length(table):
    return len(table) if isinstance(table, list) else table.numel()


class _FixedTable:
    """A launch case's call: one table of `entries`, the call's output elements as its sizes."""

    def __init__(self, entries, call):
        self.entries, self.call = entries, call

    def __call__(self, sized_table):
        size, table = sized_table
        return self.call(size, table)


def _table(size, dtype, form, device):
    gen = torch.Generator(device="cpu").manual_seed(size)
    if dtype == torch.int32:
        values = torch.randint(-3, 4, (size,), generator=gen, dtype=torch.int32)
    else:
        values = torch.rand(size, generator=gen) / size
    if form == "static":
        return values.tolist()
    return values if form == "host" else values.to(device)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--launch-only", action="store_true", help="only the small-launch boundary")
    parser.add_argument("--ops", help="only these ops (comma-separated names)")
    args = parser.parse_args()
    device = torch.device("cuda")
    cases = [] if args.launch_only else _cases(device)
    # The launch boundary: the table fixed, the call's outputs as the sizes.
    for op, entries, dtype, elements, call in _launch_cases(device):
        cases.append(
            (op, f"launch, {entries} entries", elements, dtype, _FixedTable(entries, call))
        )
    if args.ops:
        cases = [case for case in cases if case[0] in args.ops.split(",")]
    results = []
    print(f"{torch.cuda.get_device_name()}: ms a call, outside / inside")
    print(
        f"{'op':<18}{'boundary':<24}{'form':<8}{'sizes':>14}{'inside':>10}{'outside':>10}"
        f"{'ratio':>8}"
    )
    for op, boundary, sizes, dtype, call in cases:
        for form in ("static", "host", "device"):
            if isinstance(call, _FixedTable):  # one table, the call's size varies
                table = _table(call.entries, dtype, form, device)
                tables = [(size, table) for size in sizes]
            else:
                tables = [_table(size, dtype, form, device) for size in sizes]
            times = ([], [])
            for _ in range(args.rounds):
                for i, table in enumerate(tables):
                    times[i].append(cuda_event_ms(lambda t=table, f=call: f(t), 3, 5, 2))
            inside, outside = (statistics.median(t) for t in times)
            ratio = outside / inside
            label = f"{sizes[0]}/{sizes[1]}"
            print(
                f"{op:<18}{boundary:<24}{form:<8}{label:>14}{inside:>10.4f}{outside:>10.4f}"
                f"{ratio:>8.3f}"
            )
            results.append(
                {
                    "op": op,
                    "boundary": boundary,
                    "form": form,
                    "sizes": sizes,
                    "inside_ms": inside,
                    "outside_ms": outside,
                    "ratio": ratio,
                }
            )
    worst = max(results, key=lambda r: r["ratio"])
    print(f"worst: {worst['op']} {worst['boundary']} {worst['form']} {worst['ratio']:.3f}x")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"device": torch.cuda.get_device_name(), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
