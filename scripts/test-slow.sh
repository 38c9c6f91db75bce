#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Python tests marked slow, which the test command leaves out to stay within its time: models
# saved on each Keras backend reloaded on every one, SeparableFilter and Upfirdn through PyTorch's
# opcheck and torch.compile (sigma tensors, rates changing between calls), torch.compile of every
# op, the core through add_subdirectory, DTensor on a mesh of four processes, the documentation's
# Python snippets, the demo and the TensorFlow benchmarks' smoke runs, saved models loaded in fresh
# processes, the stress run on logical CPUs and TensorFlow's multi-worker training. Needs the setup
# and build the test command makes. Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
workers=$(($(nproc) < 4 ? $(nproc) : 4))
env PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" .venv/bin/python -m pytest tests/python \
  -q -n "$workers" -m slow "$@"
echo "test-slow: all passed in $((SECONDS - start)) s" >&2
