# SPDX-License-Identifier: Apache-2.0
"""Four CUDA streams upload different tables into Frobulate's one constant bank, interleaved.

Each call's table (1,025 to 16,384 entries: too many to go by value, so it takes a run of bank
slots) has a sum of its own, and the data are zeros, so every output element must equal its
call's sum exactly. With
the core's cross-stream hazard tracking off (the library built with
CONSTMEM_BUILD_UNSAFE_VARIANT=ON, _constmem_torch_unsafe.so), an upload overwrites a slot that a
kernel on the other stream still reads, and outputs of the other table appear:

    python3 tests/python/torch_streams.py                         # expects none
    CONSTMEM_TORCH_LIBRARY=build/pytorch/_constmem_torch_unsafe.so \\
        python3 tests/python/torch_streams.py --expect mismatches
"""

import argparse
import sys

import constmem.torch as cm
import torch

# Lengths from just past the by-value limit to a whole bank (runs of one to four slots), small
# entries so that every partial sum is exact in float32, and short kernels that overlap the other
# streams' uploads.
LENGTHS = (1025, 2000, 4097, 9000, 16384)
ELEMENTS = 65537


def run_streams(rounds: int, streams: int = 4, seed: int = 0) -> tuple[int, int]:
    """(calls whose output differs from their own table's sum, calls made)."""
    generator = torch.Generator().manual_seed(seed)
    cpu_tables = [
        torch.randint(-50, 51, (LENGTHS[i % len(LENGTHS)],), dtype=torch.int32, generator=generator)
        for i in range(16)
    ]
    # Half the tables are CUDA tensors, copied device to device into a slot; half are staged.
    tables = [t.cuda() if i % 2 else t for i, t in enumerate(cpu_tables)]
    sums = [float(t.sum()) for t in cpu_tables]
    data = torch.zeros(ELEMENTS, device="cuda")
    side = [torch.cuda.Stream() for _ in range(streams)]
    bad = [torch.zeros((), dtype=torch.int64, device="cuda") for _ in side]
    for stream in side:
        stream.wait_stream(torch.cuda.current_stream())
    calls = 0
    for r in range(rounds):
        for s, stream in enumerate(side):
            k = (r * 7 + s * 3) % len(tables)
            with torch.cuda.stream(stream):
                out = cm.frobulate(data, tables[k])
                bad[s] += (out != sums[k]).any()
            calls += 1
    torch.cuda.synchronize()
    return int(sum(b.item() for b in bad)), calls


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--expect", choices=["none", "mismatches"], default="none")
    args = parser.parse_args()
    mismatches, calls = run_streams(args.rounds)
    print(f"torch_streams: {mismatches} of {calls} calls mismatching ({cm.library_path()})")
    if args.expect == "none":
        return 0 if mismatches == 0 else 1
    return 0 if mismatches > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
