# SPDX-License-Identifier: Apache-2.0
"""Plots the benchmarks' JSON.

python3 bench/plot.py KERNEL_JSON PNG                     Frobulate's throughput against table
                                                          length, per placement, with the ceiling
python3 bench/plot.py --workloads IMAGE_JSON RESAMPLE_JSON PNG
                                                          the separable filter's and the
                                                          resampler's speed against the tools
                                                          users run today
"""

import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def main(kernel_json, png):
    with open(kernel_json) as f:
        k = json.load(f)
    fig, ax = plt.subplots(figsize=(8, 5))
    for dtype, color in (("float32", "tab:blue"), ("float64", "tab:orange")):
        for placement, style in (("constant_bank", "o-"), ("by_value", "s:")):
            rows = [
                r
                for r in k["frobulate"]
                if r["dtype"] == dtype and r.get("placement", "constant_bank") == placement
            ]
            ax.plot(
                [r["table"] for r in rows],
                [r["elements_per_s"] / 1e9 for r in rows],
                style,
                color=color,
                label=f"Frobulate {dtype} ({placement})",
            )
        rows = [
            r
            for r in k["frobulate"]
            if r["dtype"] == dtype and r.get("placement", "constant_bank") == "constant_bank"
        ]
        ax.plot(
            [r["table"] for r in rows],
            [r["ceiling_elements_per_s"] / 1e9 for r in rows],
            "--",
            color=color,
            alpha=0.6,
            label=f"ceiling {dtype} (min of memory, adds)",
        )
    matrix = k["placement_matrix"]
    quarter = k["matrix_elements"]
    for placement, marker in (("by_value", "s"), ("constant_bank", "^"), ("global_memory", "v")):
        points = [
            (r["table"], quarter / (r["uniform_ms"][placement] * 1e-3) / 1e9)
            for r in matrix
            if r["uniform_ms"][placement]
        ]
        ax.plot(
            [p[0] for p in points],
            [p[1] for p in points],
            marker,
            linestyle=":",
            label=f"float32 {placement} (uniform)",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("table length (entries)")
    ax.set_ylabel("G elements / s")
    ax.set_title(f"Frobulate on {k['device']}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=120)


def gpu_name(path):
    """The GPU a results/<gpu>/ file was measured on (the image benchmark's rows do not say)."""
    folder = os.path.basename(os.path.dirname(os.path.abspath(path)))
    return folder.upper() if folder.startswith(("h1", "h2")) else "GPU"


def workloads(image_json, resample_json, png):
    """The other tools' times over constmem's: image blurs by k, resampling by rates."""
    with open(image_json) as f:
        image = json.load(f)
    with open(resample_json) as f:
        resample = json.load(f)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    big = [r for r in image if r["shape"][0] == 32 and r["dtype"] == "float32"]
    for name, marker in (("torchvision", "o"), ("kornia", "s"), ("cupy", "^")):
        rows = [r for r in big if r.get(f"{name}_ms")]
        if not rows:  # not importable in that run
            continue
        left.plot(
            [r["k"] for r in rows],
            [r[f"{name}_ms"] / r["constmem_ms"] for r in rows],
            marker + "-",
            label=name,
        )
    nhwc = [r for r in big if r.get("cvcuda_ms")]
    left.plot(
        [r["k"] for r in nhwc],
        [r["cvcuda_ms"] / r["constmem_nhwc_ms"] for r in nhwc],
        "D-",
        label="CV-CUDA (NHWC, against constmem on NHWC)",
    )
    left.plot(
        [r["k"] for r in big],
        [r["copy_ms"] / r["constmem_ms"] for r in big],
        "k--",
        label="constmem's fraction of the copy bandwidth",
    )
    left.set_xscale("log", base=2)
    left.set_yscale("log")
    left.set_xlabel("taps an axis (k)")
    left.set_ylabel("their time / constmem's")
    batch = resample["gpu_resample_batch_64x10s"]
    rates = list(batch)
    for name, label in (
        ("torchaudio_transform", "torchaudio Resample"),
        ("torchaudio_functional", "torchaudio.functional.resample"),
        ("julius", "julius"),
        ("cupy_resample_poly", "cupyx resample_poly"),
    ):
        right.plot(
            range(len(rates)),
            [
                batch[r].get(f"{name}_ms", math.nan) / batch[r]["constmem_resample_ms"]
                for r in rates
            ],
            "o-",
            label=label,
        )
    right.set_xticks(range(len(rates)), rates)
    right.set_yscale("log")
    right.set_ylabel("their time / constmem's")
    right.set_title("resample, [64, 10 s] float32")
    for ax in (left, right):
        ax.axhline(1.0, color="grey", linewidth=0.8)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("constmem against the tools users run today")
    left.set_title(f"gaussian_blur, [32, 3, 1080, 1920] float32, {gpu_name(image_json)}")
    right.set_title(f"{right.get_title()}, {resample.get('device', 'GPU')}")
    fig.tight_layout()
    fig.savefig(png, dpi=110)


if __name__ == "__main__":
    if sys.argv[1] == "--workloads":
        workloads(*sys.argv[2:5])
    else:
        main(sys.argv[1], sys.argv[2])
