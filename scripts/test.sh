#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The test command: sets up, builds (including the GPU kernels when nvcc exists), then runs the
# C++ tests (GPU tests skip without a GPU), the installed wheel (built in the same build directory),
# the Python tests (on every device TF sees, in parallel) and the host code under AddressSanitizer
# and UndefinedBehaviorSanitizer (CONSTMEM_SKIP_SANITIZE=1 skips that step). Arguments go to
# pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
(cd "${CONSTMEM_BUILD_DIR:-build}" && ctest --output-on-failure)
scripts/test-wheel.sh
# One pytest worker per core, at most four (each imports TensorFlow, PyTorch and JAX).
workers=$(($(nproc) < 4 ? $(nproc) : 4))
PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" .venv/bin/python -m pytest tests/python -q \
  -n "$workers" "$@"
if [ -z "${CONSTMEM_SKIP_SANITIZE:-}" ]; then
  scripts/sanitize.sh
fi
