#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: builds the op library (only what changed since the last build), then runs
# Frobulate on 16 Mi elements with a 100-entry table, on the GPU when TensorFlow sees one, else on
# the CPU, checked against NumPy. A machine without a GPU builds only the CPU kernels, without
# the XLA lowering (which the demo does not use), in build-cpu/ (the development build in build/
# stays as it is). Arguments go to examples/demo.py.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || scripts/setup.sh --demo
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  scripts/build.sh --target _constmem_ops >/dev/null
else
  CONSTMEM_BUILD_DIR=build-cpu \
    CONSTMEM_CMAKE_ARGS="-DCONSTMEM_WITH_GPU=OFF -DCONSTMEM_WITH_XLA=OFF -DCONSTMEM_COPY_TO_PACKAGE=OFF" \
    scripts/build.sh --target _constmem_ops >/dev/null
  export CONSTMEM_TENSORFLOW_LIBRARY="$PWD/build-cpu/_constmem_ops.so"
fi
TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}" PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" \
  exec .venv/bin/python examples/demo.py "$@"
