# SPDX-License-Identifier: Apache-2.0
"""Counts the instructions that matter in Frobulate's kernels, from `cuobjdump -sass` output:
16-byte loads (LDG.E.128), table reads (LDC), conversions (I2F*) and additions (FADD/DADD), and
whether any addition takes its operand straight from a constant bank (c[...]).

  cuobjdump -sass frobulate_gpu.cu.o | python3 bench/sass_facts.py
"""

import collections
import re
import sys


def main():
    text = sys.stdin.read()
    for chunk in re.split(r"\n\s*Function : ", text)[1:]:
        name = chunk.split("\n", 1)[0]
        if "FrobulateKernel" not in name:
            continue
        counts = collections.Counter()
        folded = 0
        for line in chunk.split("\n"):
            match = re.search(
                r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)\s*([^;]*);", line
            )
            if not match:
                continue
            opcode, operands = match.groups()
            if re.match(r"(LDG|STG|LDC|I2F|FADD|DADD)", opcode):
                counts[opcode] += 1
            if opcode in ("FADD", "DADD") and "c[" in operands:
                folded += 1
        short = re.sub(r".*FrobulateKernelI", "", name)
        short = re.sub(r"EEEvPK.*|EvPK.*", "", short)
        print(
            f"{short}: "
            + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
            + f"; additions with a c[] operand: {folded}"
        )


if __name__ == "__main__":
    main()
