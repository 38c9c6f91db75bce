#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The clean-environment check (scripts/test-clean-envs.sh) on the CPython releases this Debian 12
# machine does not carry, from Debian unstable (scripts/debian-python.sh): each framework alone
# with constmem's wheels in an empty environment, its ops against NumPy. The test command runs the
# check on the machine's own Python (3.11). TensorFlow 2.21 publishes no wheels for 3.14. Slow (the
# wheels' build, each framework's download): outside the test command.
#
#   scripts/check-pythons.sh [WHEELS]   # WHEELS: scripts/build-wheels.sh's output (else built)
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
wheels=${1:-}
if [ -z "$wheels" ]; then
  wheels=$work/wheels
  # As the test command builds them: in the development build's directory and architectures.
  build=${CONSTMEM_BUILD_DIR:-build}
  archs=$(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
  scripts/build-wheels.sh --build-dir "$build" --archs "${archs:-75-real}" --out "$wheels" \
    --no-sdist >/dev/null
  scripts/build.sh >/dev/null  # the development build back as it was
fi
# The frameworks' releases the test extras pin.
mapfile -t pinned < <(.venv/bin/python - <<'PY'
import re, tomllib
extras = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]
pinned = {re.split("[=<>]", r)[0]: r for r in extras["test"] + extras["tensorflow"]}
print("\n".join(pinned[name] for name in ("torch", "jax", "tensorflow")))
PY
)
for version in 3.13 3.14; do
  python=$(scripts/debian-python.sh "$version")
  requirements=("${pinned[@]}")
  [ "$version" = 3.13 ] || requirements=("${pinned[@]:0:2}")  # no TensorFlow
  echo "check-pythons: $("$python" --version), ${requirements[*]}" >&2
  CONSTMEM_ENV_PYTHON=$python scripts/test-clean-envs.sh "$wheels" cu13 "${requirements[@]}"
done
