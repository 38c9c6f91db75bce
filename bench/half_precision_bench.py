# SPDX-License-Identifier: Apache-2.0
"""float16 and bfloat16 against float32 on the GPU, each ratio measured in this run.

- constmem.torch.gaussian_blur on [32, 3, 1080, 1920] and [256, 3, 224, 224] NCHW, k = 3, 5, 9,
  17, 31, in float32, float16 and bfloat16: each time, its share of a same-run device copy of the
  bytes it reads and writes (torch's copy_ of the images in that dtype), and the 16-bit speed over
  float32's; torchvision's float16 blur in the same run where torchvision is importable.
- constmem.torch.resample on [64, 480000] for 48 -> 16, 16 -> 48, 44.1 -> 48 and 96 -> 8 kHz in
  the three dtypes, each one's share of the copy and the 16-bit speed over float32's.

CUDA events, the median of repeated batches (bench/timing.py).

    python3 bench/half_precision_bench.py [--json FILE] [--quick]
"""

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import constmem.torch as cm
from timing import cuda_event_ms

DTYPES = ("float32", "float16", "bfloat16")


def copy_ms(x, y):
    return cuda_event_ms(lambda: y.copy_(x))


def blur_rows(shapes, ks, rows):
    try:
        import torchvision.transforms.v2.functional as tvf
    except ImportError:
        tvf = None
    for shape in shapes:
        for k in ks:
            times = {}
            for dtype in DTYPES:
                x = torch.rand(shape, device="cuda").to(getattr(torch, dtype))
                sigma = [0.3 * ((k - 1) * 0.5 - 1) + 0.8] * 2
                ms = cuda_event_ms(lambda x=x: cm.gaussian_blur(x, [k, k], sigma))  # noqa: B023
                copy = copy_ms(x, torch.empty_like(x))
                times[dtype] = ms
                row = {"op": "gaussian_blur", "shape": list(shape), "k": k, "dtype": dtype}
                row.update(ms=ms, copy_ms=copy, share_of_copy=copy / ms)
                if dtype != "float32":
                    row["speed_over_float32"] = times["float32"] / ms
                if tvf is not None and dtype == "float16":
                    tv = cuda_event_ms(lambda x=x: tvf.gaussian_blur(x, [k, k], sigma))  # noqa: B023
                    row["torchvision_over_constmem"] = tv / ms
                rows.append(row)
                print(
                    f"blur {list(shape)} k={k:2d} {dtype:8s} {ms:7.3f} ms  "
                    f"{100 * copy / ms:5.1f}% of the copy"
                    + (
                        f"  {row['speed_over_float32']:.2f}x float32's speed"
                        if "speed_over_float32" in row
                        else ""
                    )
                    + (
                        f"  torchvision {row['torchvision_over_constmem']:.2f}x its time"
                        if "torchvision_over_constmem" in row
                        else ""
                    ),
                    flush=True,
                )


def resample_rows(shape, pairs, rows):
    for orig, new in pairs:
        times = {}
        for dtype in DTYPES:
            x = torch.randn(shape, device="cuda").to(getattr(torch, dtype))
            y = cm.resample(x, orig, new)
            ms = cuda_event_ms(lambda x=x: cm.resample(x, orig, new))  # noqa: B023
            copy = (copy_ms(x, torch.empty_like(x)) + copy_ms(y, torch.empty_like(y))) / 2
            times[dtype] = ms
            row = {"op": "resample", "shape": list(shape), "orig": orig, "new": new}
            row.update(dtype=dtype, ms=ms, copy_ms=copy, share_of_copy=copy / ms)
            if dtype != "float32":
                row["speed_over_float32"] = times["float32"] / ms
            rows.append(row)
            print(
                f"resample {orig}->{new} {dtype:8s} {ms:7.3f} ms  {100 * copy / ms:5.1f}% of "
                "the copy"
                + (
                    f"  {row['speed_over_float32']:.2f}x float32's speed"
                    if "speed_over_float32" in row
                    else ""
                ),
                flush=True,
            )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the measurements to this file")
    parser.add_argument("--quick", action="store_true", help="small shapes only (a smoke test)")
    args = parser.parse_args()
    print(torch.cuda.get_device_name(), flush=True)
    rows = []
    if args.quick:
        blur_rows([(2, 3, 64, 96)], (3, 9), rows)
        resample_rows((2, 4800), ((48000, 16000),), rows)
    else:
        blur_rows([(32, 3, 1080, 1920), (256, 3, 224, 224)], (3, 5, 9, 17, 31), rows)
        pairs = ((48000, 16000), (16000, 48000), (44100, 48000), (96000, 8000))
        resample_rows((64, 480000), pairs, rows)
    if args.json:
        Path(args.json).write_text(
            json.dumps({"device": torch.cuda.get_device_name(), "rows": rows}, indent=1)
        )


if __name__ == "__main__":
    main()
