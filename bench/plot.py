# SPDX-License-Identifier: Apache-2.0
"""Plots kernel_bench's JSON: throughput against table length, per placement, with the ceiling."""

import json
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


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
