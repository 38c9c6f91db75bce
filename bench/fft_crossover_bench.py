# SPDX-License-Identifier: Apache-2.0
"""FirFilter's direct kernel against its FFT route and the anchors, by filter length.

For each filter length (64 to 2^20 taps) on rows of float32 samples, in one run: the direct
kernel, the FFT route (`method="fft"`), `method="auto"`, and the anchors, each its median time;
"auto" over the faster anchor as a ratio; and each route's time per unit of its work (the direct
kernel's multiply-adds, the FFT route's butterflies: constmem.ops._fft.fft_work), whose ratio near
the crossover is the BUTTERFLY_COST "auto" uses.

Anchors: on the CPU `scipy.signal.oaconvolve` (one thread, as scipy.fft runs) and a torch.fft
convolution of the whole row, with PyTorch on one thread too; on a GPU
`cupyx.scipy.signal.oaconvolve` (where CuPy is installed) and the torch.fft convolution. A direct
time estimated above --direct-limit seconds is not measured (the kernel's time per multiply-add
at shorter filters, times its multiply-adds, is printed instead, marked "~").

    PYTHONPATH=python python3 bench/fft_crossover_bench.py [--device cuda] [--json OUT]
"""

import argparse
import json
import platform
import statistics
import time

import constmem.torch as cm
import numpy as np
import torch
from constmem.ops import _fft
from timing import cpu_model

TAPS = [64, 128, 256, 512, 1024, 2048, 4096, 16384, 65536, 1 << 18, 1 << 20]


def _times(fns, device, repetitions):
    """Median seconds a call of each of `fns` (name: function), after a warm-up call of each.

    The functions are called in turn in every repetition, each repetition starting one further on
    (so that a drift of the machine's speed, and what the call before leaves in the caches, reach
    each alike).
    """
    for fn in fns.values():
        fn()
    times = {name: [] for name in fns}
    names = list(fns)
    for repetition in range(repetitions):
        turn = repetition % len(names)
        for name in names[turn:] + names[:turn]:
            fn = fns[name]
            if device == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            fn()
            if device == "cuda":
                torch.cuda.synchronize()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def _torch_fft_valid(x, taps):
    """The VALID correlation by one FFT of each whole row (torchaudio's fftconvolve's way)."""
    n, k = x.shape[-1], taps.shape[0]
    size = 1 << (n + k - 1 - 1).bit_length()
    spectrum = torch.fft.rfft(x, size) * torch.fft.rfft(taps.flip(0), size)
    return torch.fft.irfft(spectrum, size)[..., k - 1 : n]


def _anchors(device):
    found = {"torch.fft": _torch_fft_valid}
    if device == "cpu":
        import scipy.signal

        found["scipy.oaconvolve"] = lambda x, taps: scipy.signal.oaconvolve(
            x.numpy(), taps.numpy()[None, ::-1], mode="valid", axes=-1
        )
    else:
        try:
            import cupy
            import cupyx.scipy.signal
        except ImportError:
            return found
        found["cupy.oaconvolve"] = lambda x, taps: cupyx.scipy.signal.oaconvolve(
            cupy.asarray(x), cupy.asarray(taps.flip(0))[None], mode="valid", axes=-1
        )
    return found


def _device_key(device):
    return "cpu" if device == "cpu" else "gpu"


def run(device, rows, samples, taps_list, direct_limit, repetitions):
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal((rows, samples), np.float32), device=device)
    anchors = _anchors(device)
    per_multiply_add = None
    cases = []
    for k in taps_list:
        if k > samples:
            continue
        taps = torch.tensor(rng.standard_normal(k, np.float32) / k, device=device)
        outputs = samples - k + 1
        multiply_adds = rows * outputs * k
        work = _fft.fft_work(rows, 1, 1, k, outputs, _device_key(device))
        estimate = per_multiply_add * multiply_adds if per_multiply_add else 0.0
        fns = {}
        if estimate <= direct_limit:
            fns["direct"] = lambda t=taps: cm.fir_filter(x, t, padding="VALID", method="direct")
        fns["fft"] = lambda t=taps: cm.fir_filter(x, t, padding="VALID", method="fft")
        fns["auto"] = lambda t=taps: cm.fir_filter(x, t, padding="VALID", method="auto")
        for name, anchor in anchors.items():
            fns[name] = lambda a=anchor, t=taps: a(x, t)
        times = _times(fns, device, repetitions)
        if "direct" in times:
            per_multiply_add = times["direct"] / multiply_adds
        direct = times.get("direct", per_multiply_add * multiply_adds)
        best_anchor = min(times[name] for name in anchors)
        cases.append(
            {
                "taps": k,
                "rows": rows,
                "samples": samples,
                "ms": {name: round(t * 1e3, 4) for name, t in times.items()},
                "direct_ms": round(direct * 1e3, 4),
                "direct_estimated": "direct" not in times,
                "auto_over_best_anchor": round(best_anchor / times["auto"], 3),
                # What a butterfly costs in multiply-adds, on this device at this length.
                "butterfly_cost": round((times["fft"] / work) / (direct / multiply_adds), 3),
                "auto_chose_fft": abs(times["auto"] - times["fft"]) < abs(times["auto"] - direct),
            }
        )
        row = cases[-1]
        route = "fft" if row["auto_chose_fft"] else "direct"
        # "auto" against the route it took, timed in turn with it: what the choice costs.
        row["auto_over_its_route"] = (
            round(times[route] / times["auto"], 3) if route in times else None
        )
        mark = "~" if row["direct_estimated"] else " "
        print(
            f"taps {k:>8}: direct {mark}{row['direct_ms']:>10.3f}"
            f" ms  fft {row['ms']['fft']:>9.3f}  auto {row['ms']['auto']:>9.3f}  "
            + "  ".join(f"{n} {row['ms'][n]:.3f}" for n in anchors)
            + f"  auto/best anchor {row['auto_over_best_anchor']:.2f}x"
            + f"  butterfly cost {row['butterfly_cost']:.3f}"
            + f"  auto/its route {row['auto_over_its_route']}",
            flush=True,
        )
    return cases


def route_cost(device, cases, butterfly_cost, repetitions, samples=4096, k=64):
    """The FFT route's cost whatever its size, in the direct kernel's multiply-adds at full speed.

    The route's time on one short row less the direct kernel's, over the direct kernel's least
    time a multiply-add among `cases`, less the route's butterflies at `butterfly_cost`
    (ROUTE_COST in constmem/ops/_fft.py).
    """
    rng = np.random.default_rng(1)
    x = torch.tensor(rng.standard_normal((1, samples), np.float32), device=device)
    taps = torch.tensor(rng.standard_normal(k, np.float32) / k, device=device)
    measured = _times(
        {
            "fft": lambda: cm.fir_filter(x, taps, padding="VALID", method="fft"),
            "direct": lambda: cm.fir_filter(x, taps, padding="VALID", method="direct"),
        },
        device,
        repetitions,
    )
    fft, direct = measured["fft"], measured["direct"]
    full_speed = min(
        c["direct_ms"] / (c["taps"] * (c["samples"] - c["taps"] + 1) * c["rows"])
        for c in cases
        if not c["direct_estimated"]
    )
    return {
        "samples": samples,
        "taps": k,
        "fft_ms": round(fft * 1e3, 4),
        "direct_ms": round(direct * 1e3, 4),
        "multiply_adds": round(
            (fft - direct) * 1e3 / full_speed
            - butterfly_cost * _fft.fft_work(1, 1, 1, k, samples - k + 1, _device_key(device))
        ),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--samples", type=int, default=None)
    parser.add_argument("--direct-limit", type=float, default=2.0)
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="PyTorch's CPU threads")
    parser.add_argument("--json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = args.rows or (8 if args.device == "cuda" else 1)
    samples = args.samples or (1 << 20)
    cases = run(args.device, rows, samples, TAPS, args.direct_limit, args.repetitions)
    median_cost = statistics.median(c["butterfly_cost"] for c in cases if not c["direct_estimated"])
    summary = {
        "device": torch.cuda.get_device_name() if args.device == "cuda" else platform.processor(),
        "cpu_model": cpu_model(),
        "threads": args.threads,
        "rows": rows,
        "samples": samples,
        "butterfly_cost_median": median_cost,
        "BUTTERFLY_COST": _fft.BUTTERFLY_COST,
        "route_cost": route_cost(args.device, cases, median_cost, args.repetitions),
        "ROUTE_COST": _fft.ROUTE_COST,
        "cases": cases,
    }
    print(f"butterfly cost (median of measured lengths): {summary['butterfly_cost_median']}")
    short = summary["route_cost"]
    print(
        f"route cost: {short['multiply_adds']:.3g} multiply-adds (one row of {short['samples']},"
        f" {short['taps']} taps: fft {short['fft_ms']:.3f} ms, direct {short['direct_ms']:.3f})"
    )
    worst = min(c["auto_over_best_anchor"] for c in cases)
    print(f"auto over the faster anchor, worst length: {worst:.2f}x")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
