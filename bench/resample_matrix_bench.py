# SPDX-License-Identifier: Apache-2.0
"""constmem.torch.resample against torchaudio at every ordered pair of common audio rates.

[64, 480000] float32 on the GPU (64 clips of 10 s at 48 kHz), every ordered pair of 8000, 11025,
16000, 22050, 24000, 32000, 44100, 48000 and 96000 Hz (72 pairs), torchaudio's defaults:
constmem's `resample` as a user calls it (the filter a static table), against
`torchaudio.functional.resample` (its kernel made on every call) and
`torchaudio.transforms.Resample` (its kernel made once), and a device copy of the input's and the
output's bytes measured in the same run (the memory ceiling). GPU time by CUDA events, median of
repetitions of back-to-back calls; the ratios are theirs / ours. torchaudio runs as it does by
default (cuDNN's convolutions in TF32); the accuracy columns compare constmem with torchaudio's
transform in full float32 (TF32 off) and constmem's GPU result with its CPU kernel's (first row).

    python3 bench/resample_matrix_bench.py [--json FILE] [--rates 8000,16000,...]
"""

import argparse
import itertools
import json
import os
import statistics
import sys

import constmem.torch as cm
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import cuda_event_ms

RATES = (8000, 11025, 16000, 22050, 24000, 32000, 44100, 48000, 96000)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json")
    parser.add_argument("--rates", default=",".join(map(str, RATES)))
    parser.add_argument("--clips", type=int, default=64)
    parser.add_argument("--samples", type=int, default=480000)
    args = parser.parse_args()
    import torchaudio

    rates = [int(r) for r in args.rates.split(",")]
    x = torch.randn(args.clips, args.samples, device="cuda")
    results = []
    print(f"{torch.cuda.get_device_name()}, [{args.clips}, {args.samples}] float32, ms a call")
    print(
        f"{'pair':>14}{'constmem':>10}{'functional':>12}{'transform':>11}{'copy':>8}"
        f"{'x func':>8}{'x trans':>8}{'of copy':>9}{'max diff':>10}"
    )
    for orig, new in itertools.permutations(rates, 2):
        transform = torchaudio.transforms.Resample(orig, new).cuda()
        ours_y = cm.resample(x, orig, new)
        torch.backends.cudnn.allow_tf32 = False
        theirs_y = transform(x)
        torch.backends.cudnn.allow_tf32 = True
        assert ours_y.shape == theirs_y.shape, (ours_y.shape, theirs_y.shape)
        error = (ours_y - theirs_y).abs().max().item()
        on_cpu = cm.resample(x[:1].cpu(), orig, new)
        cpu_equal = bool(torch.equal(on_cpu, ours_y[:1].cpu()))
        ours = cuda_event_ms(lambda o=orig, n=new: cm.resample(x, o, n), 5, 5, 3)
        functional = cuda_event_ms(
            lambda o=orig, n=new: torchaudio.functional.resample(x, o, n), 3, 3, 2
        )
        module = cuda_event_ms(lambda t=transform: t(x), 5, 5, 3)
        # A copy that reads and writes as many bytes as the input and the output hold.
        half = (x.numel() + ours_y.numel()) // 2
        source, target = torch.empty(half, device="cuda"), torch.empty(half, device="cuda")
        copied = cuda_event_ms(lambda s=source, t=target: t.copy_(s), 5, 5, 3)
        row = {
            "orig": orig,
            "new": new,
            "constmem_ms": ours,
            "functional_ms": functional,
            "transform_ms": module,
            "copy_ms": copied,
            "vs_functional": functional / ours,
            "vs_transform": module / ours,
            "copy_fraction": copied / ours,
            "max_abs_difference": error,
            "gpu_equals_cpu": cpu_equal,
        }
        results.append(row)
        print(
            f"{orig:>6}->{new:<7}{ours:>10.3f}{functional:>12.3f}{module:>11.3f}{copied:>8.3f}"
            f"{row['vs_functional']:>8.2f}{row['vs_transform']:>8.2f}{row['copy_fraction']:>9.2f}"
            f"{error:>10.1e}{'' if cpu_equal else '  GPU != CPU'}",
            flush=True,
        )
        del transform
    summary = {
        key: {
            "min": min(r[key] for r in results),
            "median": statistics.median(r[key] for r in results),
            "max": max(r[key] for r in results),
        }
        for key in ("vs_functional", "vs_transform", "copy_fraction", "max_abs_difference")
    }
    summary["gpu_equals_cpu"] = all(r["gpu_equals_cpu"] for r in results)
    print(json.dumps(summary, indent=1))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(
                {"device": torch.cuda.get_device_name(), "results": results, "summary": summary},
                f,
                indent=1,
            )


if __name__ == "__main__":
    main()
