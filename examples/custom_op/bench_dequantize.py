# SPDX-License-Identifier: Apache-2.0
"""Dequantize's speed on the GPU, as a share of a same-run copy of the bytes it moves, against
bitsandbytes' `dequantize_4bit` (where it is installed) and against the same arithmetic in
PyTorch compiled by `torch.compile` (Inductor), for NF4 weights of several sizes and each output
dtype. Every output is checked equal to the example op's before it is timed.

    APPLY_GAIN_BUILD=<example build> PYTHONPATH=<constmem>:. python3 bench_dequantize.py [--json F]

A call reads n / 2 bytes of codes and n / block scales and writes n outputs; the copy is a
device-to-device copy of as many bytes (half read, half written), timed with CUDA events like
the calls (the median of repeated batches).
"""

import argparse
import importlib.util
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from dequantize_ops import NF4
from dequantize_ops import torch as dequantize
from timing import cuda_event_ms

SHAPES = [(4096, 4096), (8192, 8192), (16384, 16384)]
DTYPES = [torch.bfloat16, torch.float16, torch.float32]
BLOCK = 64


def by_pytorch(codes, codebook, absmax, block, dtype):
    """The op's arithmetic in PyTorch: the two nibbles, the codebook's level, times the block's
    scale in float32, rounded once to dtype."""
    flat = codes.reshape(-1)
    levels = torch.stack([flat >> 4, flat & 15], -1).reshape(-1).long()
    scaled = codebook[levels].reshape(-1, block) * absmax[:, None]
    return scaled.reshape(-1).to(dtype)


def measure(ops, bnbf, compiled, codes, codebook, absmax, state, dtype):
    """One case's row: each call's median ms and share of the copy, after checking its output."""
    n = 2 * codes.numel()
    moved = codes.numel() + absmax.numel() * 4 + n * torch.finfo(dtype).bits // 8
    source = torch.empty(moved // 2, dtype=torch.uint8, device=codes.device)
    target = torch.empty_like(source)
    copy_ms = cuda_event_ms(lambda: target.copy_(source))
    ours = ops.dequantize(codes, codebook, absmax, block=BLOCK, dtype=dtype)
    calls = {"constmem": lambda: ops.dequantize(codes, codebook, absmax, block=BLOCK, dtype=dtype)}
    if bnbf is not None:
        state.dtype = dtype
        packed = codes.reshape(-1, 1)
        assert torch.equal(bnbf.dequantize_4bit(packed, state).reshape(-1), ours), "bitsandbytes"
        calls["bitsandbytes"] = lambda: bnbf.dequantize_4bit(packed, state)
    torch._dynamo.reset()  # one compile a case (more would pass the recompile limit)
    assert torch.equal(compiled(codes, codebook, absmax, BLOCK, dtype), ours), "compiled PyTorch"
    calls["compiled torch"] = lambda: compiled(codes, codebook, absmax, BLOCK, dtype)
    row = {"dtype": str(dtype).removeprefix("torch."), "bytes": moved, "copy_ms": copy_ms}
    for name, call in calls.items():
        ms = cuda_event_ms(call)
        row[name] = {"ms": ms, "share_of_copy": copy_ms / ms}
    for name in ("bitsandbytes", "compiled torch"):
        if name in row:
            row[f"{name} / constmem"] = row[name]["ms"] / row["constmem"]["ms"]
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="write the rows to this file")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("bench_dequantize: no GPU; nothing measured")
        return
    ops = dequantize()
    bnbf = None
    if importlib.util.find_spec("bitsandbytes") is not None:
        import bitsandbytes.functional as bnbf
    compiled = torch.compile(by_pytorch, dynamic=False)
    device = torch.device("cuda")
    codebook = torch.from_numpy(NF4).to(device)
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}")
    print(f"{'shape':>14} {'dtype':>9} {'copy ms':>8}  each call: ms (share of the copy)")
    rows = []
    for shape in SHAPES:
        weight = torch.randn(shape, device=device, dtype=torch.float32)
        state = None
        if bnbf is not None:
            codes, state = bnbf.quantize_4bit(weight, blocksize=BLOCK, quant_type="nf4")
            codes, absmax = codes.reshape(-1), state.absmax.float()
        else:
            codes = torch.randint(0, 256, (weight.numel() // 2,), dtype=torch.uint8, device=device)
            absmax = torch.rand(weight.numel() // BLOCK, device=device) + 0.5
        for dtype in DTYPES:
            row = measure(ops, bnbf, compiled, codes, codebook, absmax, state, dtype)
            row["shape"] = list(shape)
            rows.append(row)
            cells = ", ".join(
                f"{name} {row[name]['ms']:.4f} ({row[name]['share_of_copy']:.0%})"
                for name in ("constmem", "bitsandbytes", "compiled torch")
                if name in row
            )
            print(f"{shape!s:>14} {row['dtype']:>9} {row['copy_ms']:8.4f}  {cells}")
    print("their time / constmem's:")
    for row in rows:
        ratios = ", ".join(
            f"{name} {row[f'{name} / constmem']:.2f}x"
            for name in ("bitsandbytes", "compiled torch")
            if f"{name} / constmem" in row
        )
        print(f"  {row['shape']} {row['dtype']}: {ratios}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
