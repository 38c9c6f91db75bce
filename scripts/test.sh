#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The test command: sets up, builds (including the GPU kernels when nvcc exists), then runs the
# C++ tests (GPU tests skip without a GPU), the installed wheel (built in the same build directory),
# the Python tests (on every device TF sees, in parallel) and the host code under AddressSanitizer
# and UndefinedBehaviorSanitizer (CONSTMEM_SKIP_SANITIZE=1 skips that step). Each step says how
# long it took. Arguments go to pytest.
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
step wheel scripts/test-wheel.sh
# One pytest worker per core, at most four (each imports TensorFlow, PyTorch and JAX).
workers=$(($(nproc) < 4 ? $(nproc) : 4))
step pytest env PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" .venv/bin/python -m pytest \
  tests/python -q -n "$workers" "$@"
if [ -z "${CONSTMEM_SKIP_SANITIZE:-}" ]; then
  step sanitize scripts/sanitize.sh
fi
echo "test: all passed in $SECONDS s" >&2
