#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs torchvision's and torchaudio's own tests with their functions and transforms swapped for
# constmem's, on the CPU: torchvision v2's TestGaussianBlur (test/test_transforms_v2.py) and
# torchaudio's resample tests (functional_cpu_test.py, transforms_cpu_test.py and, where the
# checkout has them, the batch-consistency and autograd files), through the pytest plugin
# tests/peers/constmem_peers.py. It prints pass, fail and skip counts and each failure's reason.
#
#   scripts/peer-tests.sh --vision PATH --audio PATH [--baseline] [-- PYTEST_ARGS...]
#
# PATH is a checkout of pytorch/vision or pytorch/audio (or its env TORCHVISION_SRC,
# TORCHAUDIO_SRC); either may be left out. Use the tag of the installed release (torchvision
# 0.26 goes with torch 2.11). --baseline runs the peers' own functions instead (nothing swapped):
# it checks that the test files fit the installed torchvision and torchaudio. The tests need
# pytest, `parameterized` and `expecttest` (torchaudio's); $CONSTMEM_PEERS_DEPS may name a folder
# that holds them (`pip install --target DIR parameterized expecttest`). The peers' test files are
# never part of this repository, and this is not part of the test command (it needs checkouts
# from outside). $PYTHON picks the interpreter (default .venv/bin/python); the package is this
# tree's python/, its op library found as constmem finds it ($CONSTMEM_TORCH_LIBRARY, or the
# tree's build). $CONSTMEM_PEERS_REPORT_DIR, where set, receives vision.json and audio.json.
# Exits non-zero when a test failed.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
vision=${TORCHVISION_SRC:-}
audio=${TORCHAUDIO_SRC:-}
swap=1
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --vision) vision=$2; shift 2 ;;
    --audio) audio=$2; shift 2 ;;
    --baseline) swap=0; shift ;;
    --) shift; extra=("$@"); break ;;
    -h | --help) sed -n '3,22p' "$0"; exit 0 ;;
    *) echo "peer-tests: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$vision" ] && [ -z "$audio" ]; then
  echo "peer-tests: give --vision PATH and/or --audio PATH (see --help)" >&2
  exit 2
fi
python=${PYTHON:-$repo/.venv/bin/python}
pythonpath="$repo/python:$repo/tests/peers${CONSTMEM_PEERS_DEPS:+:$CONSTMEM_PEERS_DEPS}"

run() { # name, checkout, pytest arguments...
  local name=$1 checkout=$2
  shift 2
  echo "== $name: $checkout"
  local report=()
  if [ -n "${CONSTMEM_PEERS_REPORT_DIR:-}" ]; then
    mkdir -p "$CONSTMEM_PEERS_REPORT_DIR"
    report=(CONSTMEM_PEERS_REPORT="$CONSTMEM_PEERS_REPORT_DIR/$name.json")
  fi
  (cd "$checkout" && env "${report[@]}" CUDA_VISIBLE_DEVICES="" CONSTMEM_PEERS_SWAP="$swap" \
    PYTHONPATH="$pythonpath${PYTHONPATH:+:$PYTHONPATH}" \
    "$python" -m pytest -p constmem_peers -p no:cacheprovider -o addopts= -q -rN "$@" "${extra[@]}")
}

status=0
if [ -n "$vision" ]; then
  run vision "$vision" test/test_transforms_v2.py::TestGaussianBlur || status=$?
fi
if [ -n "$audio" ]; then
  files=()
  for f in functional/functional_cpu_test.py transforms/transforms_cpu_test.py \
    functional/batch_consistency_test.py transforms/batch_consistency_test.py \
    functional/autograd_cpu_test.py transforms/autograd_cpu_test.py; do
    if [ -f "$audio/test/torchaudio_unittest/$f" ]; then
      files+=("test/torchaudio_unittest/$f")
    fi
  done
  if [ ${#files[@]} -eq 0 ]; then
    echo "peer-tests: no torchaudio resample test files under $audio/test/torchaudio_unittest" >&2
    status=2
  else
    run audio "$audio" "${files[@]}" -k "resample and not pitch_shift" || status=$?
  fi
fi
exit "$status"
