#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Lint and format checks, as CI runs them (scripts/lint.sh --fix rewrites instead of checking):
# clang-format (C++ and CUDA), ruff (lint and format), shellcheck, codespell. The tools are pinned
# in pyproject.toml's `lint` extra, which scripts/setup.sh installs into .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=.venv/bin
fix=${1:-}
mapfile -t cpp < <(git ls-files '*.c' '*.cc' '*.h' '*.hpp' '*.cu' '*.cuh')
mapfile -t shell < <(git ls-files '*.sh' .ci/run)
py=(python ops tests bench examples scripts)
if [ "$fix" = --fix ]; then
  "$bin/clang-format" -i "${cpp[@]}"
  "$bin/ruff" check --fix "${py[@]}"
  "$bin/ruff" format "${py[@]}"
else
  "$bin/clang-format" --dry-run --Werror "${cpp[@]}"
  "$bin/ruff" check "${py[@]}"
  "$bin/ruff" format --check "${py[@]}"
fi
"$bin/shellcheck" -x "${shell[@]}"
"$bin/codespell" --toml pyproject.toml
echo "lint: clean (${#cpp[@]} C++/CUDA files, ${#shell[@]} shell scripts, Python in ${py[*]})"
