#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the GPU suite on a host with an NVIDIA GPU but no TensorFlow and no network, from the
# bundle scripts/gpu-bundle.sh made:
#   scripts/gpu-run.sh SMALL_DIR PARTS_DIR RESULT_DIR
# It reassembles and verifies the TensorFlow wheel, installs everything into a temporary prefix
# without network, makes TensorFlow register the GPU with the real CUDA 12 runtime and stand-ins
# for the libraries constmem never calls (docs/gpu-libraries.md), then runs the C++ GPU suite,
# the TensorFlow GPU suite, PyTorch's and JAX's tests (with the host's torch and jax), the
# logical-GPU stress (safe and unsafe builds) and the demo. It writes
# RESULT_DIR/summary.txt (for people) and RESULT_DIR/results.json.
#
# On a machine with network and TensorFlow already installed, none of this is needed: run
#   scripts/test.sh            (every op test runs on every GPU TensorFlow sees)
#   .venv/bin/python tests/gpu/logical_gpus.py
set -uo pipefail
small=$(realpath "${1:?small dir}")
parts=$(realpath "${2:?parts dir}")
results=$(mkdir -p "${3:?result dir}" && realpath "$3")
cd "$(dirname "$0")/.." || exit 2
site=${CONSTMEM_SITE:-/tmp/constmem-site}
summary=$results/summary.txt
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }

# 1. Reassemble and verify.
(cd "$small" && sha256sum --quiet -c MANIFEST.sha256) || { say "bundle: small/ checksum mismatch"; exit 2; }
(cd "$parts" && sha256sum --quiet -c "$small/PARTS.sha256") || { say "bundle: a part is missing or corrupt"; exit 2; }
[ "$(cat "$parts"/tensorflow.tar.xz.part* | sha256sum | cut -d' ' -f1)" = "$(cat "$small/tensorflow.tar.xz.sha256")" ] ||
  { say "bundle: reassembled TensorFlow archive checksum mismatch"; exit 2; }

# 2. Install without network into a temporary prefix: TensorFlow unpacked as pip would, the small
#    wheels with pip.
#    A later run on the same machine reuses the prefix.
installed=$site/.constmem-installed-$(cat "$small/tensorflow.tar.xz.sha256")
if [ ! -f "$installed" ]; then
  rm -rf "$site" && mkdir -p "$site"
  cat "$parts"/tensorflow.tar.xz.part* | xz -dc -T0 | tar -C "$site" -xf - || { say "TensorFlow unpack failed"; exit 2; }
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" \
    "$small"/wheels/*.whl || { say "install failed"; exit 2; }
  touch "$installed"
fi
export PYTHONPATH=$site:$PWD/python
export CONSTMEM_TENSORFLOW_LIBRARY=$small/lib/_constmem_ops.so CONSTMEM_EXAMPLES_DIR=$small/bin
# TensorFlow dlopens these by soname: the real cudart 12 from its wheel, stand-ins for the rest,
# except a real cuDNN 9 where the host has one (XLA initialises cuDNN when it compiles for the GPU,
# and Keras compiles model.fit with XLA there). PyTorch's own comes first (the reference benchmark
# runs PyTorch in the same environment, and it refuses any other version), then the host Python's
# `nvidia.cudnn`, both looked up without the prefix on the path; else the system's.
host_cudnn() {
  PYTHONPATH='' python3 - <<'PY' 2>/dev/null
import glob, os
try:
    import torch
    candidates = [os.path.join(os.path.dirname(torch.__file__), os.pardir, "nvidia", "cudnn", "lib")]
except ImportError:
    candidates = []
try:
    import nvidia.cudnn
    candidates += [os.path.join(p, "lib") for p in nvidia.cudnn.__path__]
except ImportError:
    pass
found = [os.path.realpath(c) for c in candidates if glob.glob(os.path.join(c, "libcudnn.so.9*"))]
print(found[0] if found else "")
PY
}
cudnn=$(host_cudnn)
[ -n "$cudnn" ] || cudnn=$(ldconfig -p | awk '/libcudnn\.so\.9 /{print $NF; exit}' | xargs -r dirname)
export LD_LIBRARY_PATH=${cudnn:+$cudnn:}$site/nvidia/cuda_runtime/lib:$small/cuda12${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-1}

say "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
say "commit:  $(cat "$small/COMMIT")"
say "gpu:     $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"
say "gpus:    $(nvidia-smi -L | wc -l)"
say "cudnn:   ${cudnn:-stand-in (XLA on the GPU and Keras model.fit need a real one)}"
tf_line=$(python3 -c 'import tensorflow as tf; print(tf.__version__, "GPUs:", len(tf.config.list_physical_devices("GPU")), tf.sysconfig.get_build_info().get("cuda_version"))' 2>"$results/tf_import.log" | tail -1)
say "tf:      $tf_line"
case "$tf_line" in *"GPUs: 0"*|"") say "TensorFlow did not register a GPU; see tf_import.log"; exit 3 ;; esac

# shellcheck source=scripts/run-step.sh
source scripts/run-step.sh
failed=0
step() {  # name, command...: runs, logs, records pass/fail counts
  # CONSTMEM_GPU_STEPS="a b" runs only the named steps (all by default).
  if [ -n "${CONSTMEM_GPU_STEPS:-}" ] && [[ " $CONSTMEM_GPU_STEPS " != *" $1 "* ]]; then return; fi
  run_step "$results" "$summary" "$1" '(passed|failed|error)[^/]* in [0-9.]+s|^\[  PASSED  \]|^\[  FAILED  \]|ERROR SUMMARY|^RESULT|^check vs NumPy|^time per call|^effective|faster$|^C API|us per call$' "${@:2}" || failed=1
  # Each failing test by name, so that the summary alone says what failed.
  grep -E '^(FAILED|ERROR) ' "$results/$1.log" 2>/dev/null | sed 's/^/    /' | tee -a "$summary"
}

# 3. The C++ GPU suite (no TensorFlow), then TensorFlow on the GPU.
step cpp_gpu_suite scripts/gpu-core.sh "$small/bin" "$results/cpp"
step cpp_cpu_kernels bash -c "\"\$1/frobulate_cpu_test\" && \"\$1/ops_cpu_test\"" _ "$small/bin"
# The suite in steps, each well inside a 10-minute call on two GPUs (every op test runs on
# every GPU): the ops' own tests, the rest, and the multi-device tests, which start GPU processes
# of their own.
op_tests=(tests/python/test_fir_filter.py tests/python/test_frobulate.py tests/python/test_polyval.py
  tests/python/test_interpolate.py tests/python/test_separable_filter_tf.py
  tests/python/test_upfirdn_tf.py tests/python/test_gpu.py)
step tf_gpu_ops python3 -m pytest -q -p no:cacheprovider "${op_tests[@]}" \
  --junitxml="$results/tf_gpu_ops.xml"
# PyTorch's and JAX's tests run with the host's own torch and jax and the bundle's op libraries
# (which the README's snippets and the Keras backends of the integration step load too).
export CONSTMEM_TORCH_LIBRARY=$small/lib/_constmem_torch.so CONSTMEM_JAX_LIBRARY=$small/lib/_constmem_jax.so
framework_tests=(tests/python/test_torch.py tests/python/test_jax.py tests/python/test_bad_input.py
  tests/python/test_separable_filter.py tests/python/test_upfirdn.py tests/python/test_layering.py
  tests/python/test_torch_tensorflow.py)
# The rest in two steps, each inside a 10-minute call on one H200: the docs, the installed package
# and the integration tests; then Keras, SavedModels and the scripts, which start fresh processes.
model_tests=(tests/python/test_keras.py tests/python/test_saved_model.py tests/python/test_scripts.py)
step tf_gpu_integration python3 -m pytest -q -p no:cacheprovider tests/python \
  --ignore=tests/python/test_multi_device.py "${op_tests[@]/#/--ignore=}" \
  "${framework_tests[@]/#/--ignore=}" "${model_tests[@]/#/--ignore=}" \
  --junitxml="$results/tf_gpu_integration.xml"
step tf_gpu_models python3 -m pytest -q -p no:cacheprovider "${model_tests[@]}" \
  --junitxml="$results/tf_gpu_models.xml"
step torch_jax env PYTHONPATH="$PWD/python" python3 -m pytest -q -p no:cacheprovider \
  "${framework_tests[@]:0:6}" --junitxml="$results/torch_jax.xml"
step torch_tensorflow python3 -m pytest -q -p no:cacheprovider "${framework_tests[6]}"
step tf_multi_device python3 -m pytest -q -p no:cacheprovider tests/python/test_multi_device.py \
  --junitxml="$results/tf_multi_device.xml"
step logical_gpus python3 tests/gpu/logical_gpus.py --expect clean
step logical_gpus_private env TF_GPU_THREAD_MODE=gpu_private python3 tests/gpu/logical_gpus.py --expect clean
step logical_gpus_unsafe env CONSTMEM_TENSORFLOW_LIBRARY="$small/lib/_constmem_ops_unsafe.so" python3 tests/gpu/logical_gpus.py --expect mismatches
step stress python3 tests/gpu/stress.py --expect clean
step stress_private env TF_GPU_THREAD_MODE=gpu_private python3 tests/gpu/stress.py --expect clean \
  --executions "${CONSTMEM_PRIVATE_EXECUTIONS:-1000000}"
step stress_unsafe env CONSTMEM_TENSORFLOW_LIBRARY="$small/lib/_constmem_ops_unsafe.so" python3 tests/gpu/stress.py --expect mismatches --executions 200000
step mirrored python3 tests/gpu/mirrored.py
step multi_worker python3 tests/gpu/multi_worker.py
# One worker process per GPU (a machine with two GPUs).
step multi_worker_per_gpu python3 tests/gpu/multi_worker.py --gpu-per-worker
step demo python3 examples/demo.py --source all
step custom_op env APPLY_GAIN_BUILD="$small/lib" python3 -m pytest -q -p no:cacheprovider \
  --rootdir examples/custom_op examples/custom_op
# TensorFlow's C API without Python, the Frobulate node pinned to the GPU (libtensorflow_cc is in
# the wheel).
step c_api env LD_LIBRARY_PATH="$site/tensorflow:$LD_LIBRARY_PATH" "$small/bin/c_api_frobulate" \
  "$small/lib/_constmem_ops.so" /device:GPU:0
step tf_libraries python3 scripts/probe_tf_cuda_libraries.py
# constmem against tf.math.polyval, torch and cupyx, and each op with and without XLA.
step reference_bench python3 bench/ops_reference_bench.py --json "$results/ops_reference_bench.json"
if [ -n "${CONSTMEM_GPU_BENCH:-}" ]; then
  step tf_op_profile python3 bench/tf_op_profile.py
  step tf_table_argument python3 bench/tf_table_argument.py
  step bench env CONSTMEM_BENCH_BIN="$small/bin" CONSTMEM_PYTHON=python3 CONSTMEM_BENCH_OUT="$results/bench" scripts/bench.sh
  # Only when CONSTMEM_GPU_STEPS names it: the TensorFlow-level benchmark alone, repeated
  # CONSTMEM_TF_BENCH_REPEATS times, to show how its figures spread between runs.
  if [[ " ${CONSTMEM_GPU_STEPS:-} " == *" tf_bench "* ]]; then
    kernel_json=()
    [ -n "${CONSTMEM_KERNEL_JSON:-}" ] && kernel_json=(--kernel-json "$CONSTMEM_KERNEL_JSON")
    for repeat in $(seq "${CONSTMEM_TF_BENCH_REPEATS:-1}"); do
      run_step "$results" "$summary" "tf_bench_$repeat" 'x$|%' python3 bench/tf_bench.py \
        --json "$results/tf_bench_$repeat.json" "${kernel_json[@]}" || failed=1
    done
  fi
fi

python3 - "$results" <<'PY'
import json, os, re, sys
results = sys.argv[1]
lines = open(os.path.join(results, "summary.txt")).read().splitlines()
steps = {}
for line in lines:
    m = re.match(r"(\S+)\s+rc=(\d+)\s+(\d+)s\s*(.*)", line)
    if m:
        steps[m.group(1)] = {"rc": int(m.group(2)), "seconds": int(m.group(3)), "counts": m.group(4)}
head = dict(l.split(":", 1) for l in lines if re.match(r"^(date|commit|gpu|gpus|tf):", l))
json.dump({"header": {k: v.strip() for k, v in head.items()}, "steps": steps}, open(os.path.join(results, "results.json"), "w"), indent=1)
PY
say "overall: $([ "$failed" -eq 0 ] && echo PASS || echo FAIL)"
exit "$failed"
