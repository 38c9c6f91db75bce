#!/usr/bin/env bash
# Creates .venv with the pinned TensorFlow and the test tools, and checks the system compilers.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v g++ >/dev/null || missing+=(g++)
[ -e /usr/include/gtest/gtest.h ] || missing+=(libgtest-dev)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && apt-get install -y -qq "${missing[@]}"
  else
    echo "setup: please install: ${missing[*]}" >&2
    exit 1
  fi
fi

if [ ! -x .venv/bin/python ]; then
  "${PYTHON:-python3}" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt
echo "setup: $(.venv/bin/python -c 'import tensorflow as tf; print("TensorFlow", tf.__version__)' 2>/dev/null)"
