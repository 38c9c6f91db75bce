#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the wheels of scripts/build-wheels.sh as a user does, each framework alone: an empty
# virtual environment, the framework from PyPI, then `pip install constmem[<framework>-<variant>]`
# from WHEELS, and runs the ops there on the CPU with no compiler on the path
# (scripts/clean_env_check.py). uv makes the environments: from its cache they take seconds.
#
#   [CONSTMEM_ENV_PYTHON=PYTHON] scripts/test-clean-envs.sh WHEELS [VARIANT [REQUIREMENT...]]
#     VARIANT: cu13 (default) or cu12; REQUIREMENT: a framework and its version, one environment
#     each (default: the releases pyproject.toml's test extras pin: torch, jax, tensorflow)
set -euo pipefail
cd "$(dirname "$0")/.."
wheels=$(cd "$1" && pwd)
variant=${2:-cu13}
shift $(($# < 2 ? $# : 2))
requirements=("$@")
if [ ${#requirements[@]} -eq 0 ]; then
  mapfile -t requirements < <(.venv/bin/python - <<'PY'
import re, tomllib
extras = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]
pinned = {re.split("[=<>]", r)[0]: r for r in extras["test"] + extras["tensorflow"]}
print("\n".join(pinned[name] for name in ("torch", "jax", "tensorflow")))
PY
  )
fi
# constmem's own dependencies (NumPy), from PyPI with the framework.
mapfile -t dependencies < <(.venv/bin/python -c 'import tomllib
print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The interpreter .venv was made from (the environments get none of .venv's packages), or
# CONSTMEM_ENV_PYTHON's (scripts/check-python314.sh).
base=${CONSTMEM_ENV_PYTHON:-$(.venv/bin/python -c 'import sys; print(sys._base_executable)')}
uv=(.venv/bin/python -m uv)
count=0
for requirement in "${requirements[@]}"; do
  framework=${requirement%%[=<>]*}
  start=$SECONDS
  env=$work/env-$((++count))
  "${uv[@]}" venv -q --python "$base" "$env"
  "${uv[@]}" pip install -q --python "$env/bin/python" "$requirement" "${dependencies[@]}"
  # constmem from the wheels alone (a name on PyPI is not this project); the framework is there.
  "${uv[@]}" pip install -q --python "$env/bin/python" --no-index --find-links "$wheels" \
    "constmem[$framework-$variant]"
  # Nothing but the environment's own programs on the path: no compiler, no CUDA toolkit.
  (cd "$work" && PATH="$env/bin" TF_CPP_MIN_LOG_LEVEL=3 JAX_PLATFORMS=cpu \
    "$env/bin/python" "$OLDPWD/scripts/clean_env_check.py" "$framework" "$variant")
  echo "test-clean-envs: $requirement alone in $((SECONDS - start)) s" >&2
done
