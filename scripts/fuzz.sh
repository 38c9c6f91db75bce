#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The fuzzers of the entry points (tests/fuzz), N calls (10^7 by default) from seed SEED, under
# AddressSanitizer and UndefinedBehaviorSanitizer: scripts/sanitize.sh's build, then 97% of the
# calls to the C entry points (the XLA FFI handlers, the op registry's C functions), 2.5% to
# PyTorch's kernels and 0.5% to TensorFlow's kernels and shape functions. Prints each fuzzer's
# summary, the machine and the time; exits non-zero on any finding or sanitizer report.
#   scripts/fuzz.sh [N] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
calls=${1:-10000000}
seed=${2:-1}
start=$(date +%s)
scripts/sanitize.sh --fuzz "$calls" "$seed"
echo "fuzz: $calls calls from seed $seed in $(($(date +%s) - start)) s on" \
  "$(lscpu | sed -n 's/^Model name: *//p') ($(nproc) cores)"
