#!/usr/bin/env bash
# The test command: sets up, builds (including the GPU kernels when nvcc exists), then runs the
# C++ tests (GPU tests skip without a GPU) and the Python tests (on every device TF sees).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
(cd "${CONSTMEM_BUILD_DIR:-build}" && ctest --output-on-failure)
.venv/bin/python -m pytest tests/python -q "$@"
