#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The stable-ABI claim: the PyTorch op library of one build (a wheel of scripts/build-wheels.sh)
# runs on the oldest PyTorch it supports and on the newest on PyPI, each alone in an empty
# environment (scripts/test-clean-envs.sh: the ops against NumPy, opcheck of their schemas, fake
# kernels and autograd). Two more PyTorch installs (about 40 s each from PyPI, seconds from uv's
# cache), so it is a script of its own, not a step of the test command; docs/design.md records
# its runs.
#
#   scripts/check-torch-abi.sh WHEELS [VARIANT [VERSION...]]
#     VARIANT: cu13 (default) or cu12; VERSION: default 2.10.0 and the newest on PyPI
set -euo pipefail
cd "$(dirname "$0")/.."
wheels=$1
variant=${2:-cu13}
shift $(($# < 2 ? $# : 2))
versions=("$@")
if [ ${#versions[@]} -eq 0 ]; then
  newest=$(.venv/bin/python -m pip index versions torch 2>/dev/null | sed -n 's/^torch (\(.*\))$/\1/p')
  versions=(2.10.0 "${newest:?cannot ask PyPI for the newest torch}")
fi
exec scripts/test-clean-envs.sh "$wheels" "$variant" "${versions[@]/#/torch==}"
