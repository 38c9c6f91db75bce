# SPDX-License-Identifier: Apache-2.0
"""The per-call cost of the functions built on the ops against the op's own call, in PyTorch.

Each function on tiny data (its kernel's time small beside the host's), measured against the op
it calls, through `torch.ops.constmem`, with the same table as a host tensor (what the function
hands the op) and the same attributes, and against `torch.add` on the same data (the floor of
any eager call). Each pair alternates round by round in one process (timing.alternating_ratios):
host timings swing between runs on a shared machine, the ratio within a run holds. On the CPU and,
where one is present, on CUDA.

- gaussian_blur on a [1, 1, 32, 32] float32 image, k = 5, sigma 1.5 (an int size and a float
  sigma), and as torchvision's transform calls it ([5, 5] and [s, s]);
- resample of a [1, 480] float32 row from 48 to 16 kHz and from 44.1 to 48 kHz;
- resample_poly of the same row by 2/3;
- the Resample module (torchaudio's transform) of 48 to 16 kHz.

    PYTHONPATH=python python3 bench/call_overhead_bench.py [--json FILE] [--device cpu|cuda]
        [--rounds N]
"""

import argparse
import json
import math
import os
import platform
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import constmem.torch as cm
from constmem.ops import separable_filter, upfirdn
from constmem.torch.transforms import Resample
from timing import alternating_ratios, cpu_model, ratio_line

ops = torch.ops.constmem


def op_call(overload, *args):
    """The op's own call through torch.ops, as a user of the raw op makes it."""
    return lambda: overload(*args)


def blur_cases(device):
    """(case, function call, the op's call, the data) for gaussian_blur."""
    image = torch.rand(1, 1, 32, 32, device=device)
    taps = torch.tensor(separable_filter.gaussian_taps(5, 1.5), dtype=torch.float32)
    op = op_call(ops.separable_filter, image, taps, taps, "shared", "reflect", "channels_first")
    yield "gaussian_blur(x, 5, 1.5)", lambda: cm.gaussian_blur(image, 5, 1.5), op, image
    yield (
        "gaussian_blur(x, [5, 5], [s, s])",
        lambda: cm.gaussian_blur(image, [5, 5], [1.5, 1.5]),
        op,
        image,
    )


def resample_cases(device):
    """(case, function call, the op's call, the data) for the resamplers."""
    row = torch.randn(1, 480, device=device)
    n = row.shape[-1]
    for orig, new in ((48000, 16000), (44100, 48000)):
        g = math.gcd(orig, new)
        taps, first = upfirdn._sinc_design(orig // g, new // g, 6, 0.99, "sinc_interp_hann", None)
        table = torch.tensor(taps, dtype=torch.float32)
        up, down = new // g, orig // g

        def op(table=table, up=up, down=down, first=first):
            # The op and the crop the function makes of its result.
            y = ops.upfirdn(row, table, up, down)
            return y[..., first : first + -(-n * up // down)]

        yield (
            f"resample(x, {orig}, {new})",
            lambda orig=orig, new=new: cm.resample(row, orig, new),
            op,
            row,
        )
    module = Resample(48000, 16000)
    taps, sinc_first = upfirdn._sinc_design(3, 1, 6, 0.99, "sinc_interp_hann", None)
    sinc = torch.tensor(taps, dtype=torch.float32)
    yield (
        "Resample(48000, 16000)(x)",
        lambda: module(row),
        lambda: ops.upfirdn(row, sinc, 1, 3)[..., sinc_first : sinc_first + n // 3],
        row,
    )
    taps, poly_first = upfirdn._poly_design(2, 3, ("kaiser", 5.0), False, (n * 2) % 3)
    poly = torch.tensor(taps, dtype=torch.float32)
    yield (
        "resample_poly(x, 2, 3)",
        lambda: cm.resample_poly(row, 2, 3),
        lambda: ops.upfirdn(row, poly, 2, 3)[..., poly_first : poly_first + -(-n * 2 // 3)],
        row,
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--device", action="append", help="cpu or cuda (default: both present)")
    parser.add_argument("--rounds", type=int, default=60)
    args = parser.parse_args()
    devices = args.device or ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    results = {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cpu": cpu_model(),
        "threads": torch.get_num_threads(),
        "devices": {},
    }
    for device in devices:
        synchronize = torch.cuda.synchronize if device.startswith("cuda") else lambda: None
        name = torch.cuda.get_device_name(device) if device.startswith("cuda") else "cpu"
        print(f"{device} ({name}):", flush=True)
        measured = {}
        for case, function, op, data in [*blur_cases(device), *resample_cases(device)]:
            torch.testing.assert_close(function(), op(), rtol=0, atol=0)  # the same work

            def add(data=data):
                return torch.add(data, data)

            against_op = alternating_ratios(function, op, synchronize, rounds=args.rounds)
            against_add = alternating_ratios(function, add, synchronize, rounds=args.rounds)
            op_against_add = alternating_ratios(op, add, synchronize, rounds=args.rounds)
            print(ratio_line(f"  {case:<34}", against_op, "op"), flush=True)
            print(ratio_line(f"  {'':<34}", against_add, "torch.add"), flush=True)
            print(ratio_line(f"  {'the op':>34}", op_against_add, "torch.add"), flush=True)
            measured[case] = {
                "against_op": against_op,
                "against_add": against_add,
                "op_against_add": op_against_add,
            }
        worst = max(measured.values(), key=lambda m: m["against_op"]["ratio_median"])
        print(f"  the largest median ratio to the op: {worst['against_op']['ratio_median']:.2f}x")
        results["devices"][f"{device} ({name})"] = measured
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
