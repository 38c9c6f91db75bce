#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The test command: sets up, builds (including the GPU kernels when nvcc exists), then runs the
# C++ tests (GPU tests skip without a GPU), the installed wheel (built in the same build directory)
# beside the host code under AddressSanitizer and UndefinedBehaviorSanitizer (each uses one core for
# much of its time; CONSTMEM_SKIP_SANITIZE=1 skips it), then the Python tests (on every device each
# framework sees, in parallel). Each step says how long it took. Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
step() {  # name, command...
  local start=$SECONDS
  "${@:2}"
  echo "test: $1 took $((SECONDS - start)) s" >&2
}
step setup scripts/setup.sh
step build scripts/build.sh
run_ctest() { (cd "${CONSTMEM_BUILD_DIR:-build}" && ctest --output-on-failure); }
step ctest run_ctest
sanitize_pid=""
if [ -z "${CONSTMEM_SKIP_SANITIZE:-}" ]; then
  sanitize_log=$(mktemp)
  # A process group of its own (job control on for this one job): a failing wheel step ends it.
  set -m
  (step sanitize scripts/sanitize.sh) >"$sanitize_log" 2>&1 &
  sanitize_pid=$!
  set +m
  trap 'rm -f "$sanitize_log"; [ -z "$sanitize_pid" ] || kill -- -"$sanitize_pid" 2>/dev/null || true' EXIT
fi
step wheel scripts/test-wheel.sh
if [ -n "$sanitize_pid" ]; then
  status=0
  wait "$sanitize_pid" || status=$?
  sanitize_pid=""
  cat "$sanitize_log" >&2
  [ "$status" = 0 ] || { echo "test: the sanitizer step failed" >&2; exit "$status"; }
fi
# One pytest worker per core, at most four (each imports TensorFlow, PyTorch and JAX); a worker
# that runs out of tests takes half of the queue of another.
workers=$(($(nproc) < 4 ? $(nproc) : 4))
step pytest env PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" .venv/bin/python -m pytest \
  tests/python -q -n "$workers" --dist worksteal "$@"
echo "test: all passed in $SECONDS s" >&2
