#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: builds the op library (only what changed since the last build), then runs
# Frobulate on 16 Mi elements with a 100-entry table, on the GPU when TensorFlow sees one, else on
# the CPU, checked against NumPy. Arguments go to examples/demo.py.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || scripts/setup.sh
scripts/build.sh --target _constmem_ops >/dev/null
TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}" PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" \
  exec .venv/bin/python examples/demo.py "$@"
