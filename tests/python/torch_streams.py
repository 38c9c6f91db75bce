# SPDX-License-Identifier: Apache-2.0
"""Two CUDA streams upload different tables into Frobulate's one constant bank, interleaved.

Each call's table (2,000 entries: too many to go by value, so it takes a bank slot) has a sum of
its own, and the data are zeros, so every output element must equal its call's sum exactly. With
the core's cross-stream hazard tracking off (the library built with
CONSTMEM_BUILD_UNSAFE_VARIANT=ON, _constmem_torch_unsafe.so), an upload overwrites a slot that a
kernel on the other stream still reads, and outputs of the other table appear:

    python3 tests/python/torch_streams.py                         # expects none
    CONSTMEM_TORCH_LIBRARY=build/pytorch/_constmem_torch_unsafe.so \\
        python3 tests/python/torch_streams.py --expect mismatches
"""

import argparse
import sys

import torch

import constmem.torch as cm

TABLE_ENTRIES = 2000
ELEMENTS = 1 << 21


def run_streams(rounds: int, streams: int = 2) -> tuple[int, int]:
    """(calls whose output differs from their own table's sum, calls made)."""
    data = torch.zeros(ELEMENTS, device="cuda")
    side = [torch.cuda.Stream() for _ in range(streams)]
    tables = [torch.full((TABLE_ENTRIES,), k, dtype=torch.int32) for k in range(1, 9)]
    bad = [torch.zeros((), dtype=torch.int64, device="cuda") for _ in side]
    for stream in side:
        stream.wait_stream(torch.cuda.current_stream())
    calls = 0
    for r in range(rounds):
        for s, stream in enumerate(side):
            k = (r * streams + s) % len(tables)
            with torch.cuda.stream(stream):
                out = cm.frobulate(data, tables[k])
                bad[s] += (out != float(TABLE_ENTRIES * (k + 1))).any()
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
