#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The benchmark command: the CPU kernels against the CPU's ceilings and against NumPy and
# TensorFlow's own ops; upload costs, host cost per launch, GPU kernel throughput against ceilings
# measured in the same run (every op), the placement matrix, the seed's approach, Polyval and
# FirFilter against tf.math.polyval, PyTorch (cuDNN) and CuPy, and TensorFlow-level figures.
# Writes JSON and a PNG plot to ${CONSTMEM_BENCH_OUT:-results/bench}. Without a GPU it runs a CPU
# smoke of the TF script only.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${CONSTMEM_BENCH_OUT:-results/bench}
bin=${CONSTMEM_BENCH_BIN:-build/bench}
python=${CONSTMEM_PYTHON:-.venv/bin/python}
mkdir -p "$out"
if [ -z "${CONSTMEM_BENCH_BIN:-}" ]; then
  [ -x .venv/bin/python ] || scripts/setup.sh
  scripts/build.sh >/dev/null
fi
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
# The CPU kernels against the machine's FADD and copy ceilings, on every core.
"$bin/cpu_bench" --json "$out/cpu_bench.json"
"$python" bench/cpu_ops_bench.py --json "$out/cpu_ops_bench.json"
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  "$bin/upload_bench" --json "$out/upload_bench.json"
  "$bin/launch_overhead" --json "$out/launch_overhead.json"
  "$bin/kernel_bench" --json "$out/kernel_bench.json"
  "$bin/ops_bench" --json "$out/ops_bench.json"
  "$python" bench/ops_reference_bench.py --json "$out/ops_reference_bench.json"
  "$python" bench/plot.py "$out/kernel_bench.json" "$out/frobulate_throughput.png" || echo "plot skipped (matplotlib missing)"
  "$python" bench/tf_bench.py --json "$out/tf_bench.json" --kernel-json "$out/kernel_bench.json"
else
  echo "bench: no NVIDIA GPU here; running the TensorFlow script as a CPU smoke test (figures meaningless)"
  "$python" bench/tf_bench.py --smoke --json "$out/tf_bench_smoke.json"
fi
