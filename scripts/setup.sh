#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Creates .venv with the pinned TensorFlow, PyTorch and JAX and the test and lint tools (all from
# pyproject.toml), after checking the system compilers and the Python version. With --demo only
# what the demo needs (NumPy and TensorFlow); a later run without it adds the rest.
set -euo pipefail
cd "$(dirname "$0")/.."
scope=${1:-all}

missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v g++ >/dev/null || missing+=(g++)
[ -e /usr/include/gtest/gtest.h ] || missing+=(libgtest-dev)
# Headers the XLA lowering needs beyond TensorFlow's wheel; without them it is not built.
optional=()
[ -e /usr/include/highwayhash/arch_specific.h ] || optional+=(libhighwayhash-dev)
[ -e /usr/include/farmhash.h ] || optional+=(libfarmhash-dev)
command -v ninja >/dev/null || optional+=(ninja-build)  # builds with make otherwise
command -v ccache >/dev/null || optional+=(ccache)  # the test command's compiler cache
if [ $((${#missing[@]} + ${#optional[@]})) -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "setup: installing ${missing[*]} ${optional[*]} with apt-get" >&2
    apt-get update -qq && apt-get install -y -qq "${missing[@]}" "${optional[@]}"
  elif [ ${#missing[@]} -gt 0 ]; then
    echo "setup: please install: ${missing[*]} (and for the XLA lowering: ${optional[*]})" >&2
    exit 1
  else
    echo "setup: not installed: ${optional[*]} (without highwayhash and farmhash the ops have no" \
      "XLA lowering; without ninja CMake uses make; without ccache each test command compiles" \
      "everything)" >&2
  fi
fi

python=${PYTHON:-python3}
# constmem takes CPython 3.11 and newer; TensorFlow 2.21.0 has wheels up to 3.13.
supported() { "$1" -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))' 2>/dev/null; }
if ! supported "$python"; then
  echo "setup: $("$python" --version 2>&1) is not supported: constmem needs Python 3.11 or newer" \
    "and TensorFlow 2.21.0 has wheels up to 3.13; set PYTHON to one of 3.11 to 3.13" >&2
  exit 1
fi
# A venv that cannot run, or that an unsupported Python made, is made again.
if [ -x .venv/bin/python ] && ! supported .venv/bin/python; then
  echo "setup: .venv is broken or uses an unsupported Python; recreating it" >&2
  rm -rf .venv
fi
[ -x .venv/bin/python ] || "$python" -m venv .venv

# Everything the project pins is in pyproject.toml: the runtime dependencies, the build needs and
# the test and lint extras, read without installing the project itself (that would build the op
# library).
mapfile -t requirements < <(.venv/bin/python - "$scope" <<'PY'
import re, sys
text = open("pyproject.toml", encoding="utf-8").read()
def array(name, section):
    block = re.search(rf"^\[{re.escape(section)}\]\n(.*?)(?=^\[|\Z)", text, re.S | re.M).group(1)
    return re.findall(r'"([^"]+)"', re.search(rf"^{name} = \[(.*?)\]", block, re.S | re.M).group(1))
extras = "project.optional-dependencies"
items = array("dependencies", "project") + array("tensorflow", extras)
if sys.argv[1] != "--demo":
    items += array("requires", "build-system") + array("torch", extras) + array("jax", extras) \
        + array("test", extras) + array("lint", extras)
for item in dict.fromkeys(items):  # the build needs are there for scripts/test-wheel.sh
    print(item)
PY
)
# uv (from PyPI) installs the same pins in a fraction of pip's time (parallel downloads, wheels
# linked from its cache); pip does it where uv cannot be had.
if .venv/bin/python -m pip install -q --disable-pip-version-check "uv>=0.9" 2>/dev/null; then
  .venv/bin/python -m uv pip install -q --compile-bytecode --python .venv/bin/python "${requirements[@]}"
else
  .venv/bin/python -m pip install -q --disable-pip-version-check "${requirements[@]}"
fi
echo "setup: $(.venv/bin/python - <<'PY' 2>/dev/null
import importlib.metadata as m
found = []
for name, dist in (("TensorFlow", "tensorflow"), ("PyTorch", "torch"), ("JAX", "jax")):
    try:
        found.append(f"{name} {m.version(dist)}")
    except m.PackageNotFoundError:
        pass
print(", ".join(found))
PY
)"
