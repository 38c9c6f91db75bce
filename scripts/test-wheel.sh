#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The package as a user installs it: builds the wheel (against .venv's TensorFlow, PyTorch, JAX),
# installs it into a fresh directory, runs an op of each framework from it,
# builds the out-of-tree consumer project with find_package through constmem.sysconfig, and builds
# and tests examples/custom_op, an op of its own for TensorFlow, PyTorch and JAX, from the
# installed package alone (with CMake, and with torch.utils.cpp_extension).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Built in the development build's directory (scripts/build.sh), with its CUDA architectures, so
# that nothing is compiled twice: scikit-build-core reconfigures it for the wheel and build.sh
# configures it back. CMake must keep the generator that directory was made with.
build=${CONSTMEM_BUILD_DIR:-build}
generator=$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
archs=$(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
archs=${archs:-75-real}  # the example op below builds for the first of them alone
CONSTMEM_CUDA_ARCHS=${CONSTMEM_CUDA_ARCHS:-$archs} \
  CMAKE_GENERATOR=${generator:-Unix Makefiles} CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) \
  .venv/bin/python -m pip wheel -q . \
  --no-build-isolation --no-deps -w "$work/wheel" -C build-dir="$PWD/$build"
wheel=$(ls "$work"/wheel/constmem-*.whl)
case "$wheel" in *-none-any.whl) echo "test-wheel: $wheel is not tagged for a platform" >&2; exit 1 ;; esac
.venv/bin/python -m pip install -q --no-deps --target "$work/site" "$wheel"
cd "$work"  # away from the source tree, so that only the installed package can be imported
# The op runs from the installed package; its last line is the CMake package directory.
cmake_dir=$(PYTHONPATH="$work/site" TF_CPP_MIN_LOG_LEVEL=3 "$OLDPWD/.venv/bin/python" - <<'PY' | tail -1
import constmem, constmem.sysconfig as s, constmem.tensorflow as cm
assert constmem.__file__.startswith(s.get_include().rsplit("/constmem/", 1)[0])
assert cm.frobulate([1.0], [2, 3]).numpy().tolist() == [6.0]
import torch, constmem.torch as ct
assert ct.frobulate(torch.ones(1), [2, 3]).tolist() == [6.0]
import constmem.jax as cj
assert cj.frobulate([1.0], [2, 3]).tolist() == [6.0]
bindings = constmem.build_info()["bindings"]
assert set(bindings) == {"tensorflow", "torch", "jax"}
# A shipped build has no test hooks: no fault injection, no staging checks.
assert not any(b["test_hooks"] for b in bindings.values()), bindings
assert not hasattr(cm._loader.ops(), "constmem_inject_fault_for_testing")
print(s.get_cmake_dir())
PY
)
echo "test-wheel: the installed TensorFlow, PyTorch and JAX ops ran; CMake package in $cmake_dir"
PATH="$PATH:/usr/local/cuda/bin" cmake -S "$OLDPWD/tests/consumer" -B "$work/consumer" \
  -Dconstmem_DIR="$cmake_dir" >/dev/null
cmake --build "$work/consumer" -j "$(nproc)" >/dev/null
"$work/consumer/consumer_host"
PATH="$PATH:/usr/local/cuda/bin" cmake -S "$OLDPWD/examples/custom_op" -B "$work/custom_op" \
  -Dconstmem_DIR="$cmake_dir" -DCONSTMEM_PYTHON="$OLDPWD/.venv/bin/python" \
  -DCMAKE_CUDA_ARCHITECTURES="${archs%%;*}" >/dev/null
cmake --build "$work/custom_op" -j "$(nproc)" >/dev/null
APPLY_GAIN_BUILD="$work/custom_op" PYTHONPATH="$work/site" \
  "$OLDPWD/.venv/bin/python" -m pytest -q \
  -p no:cacheprovider --rootdir "$OLDPWD/examples/custom_op" "$OLDPWD/examples/custom_op"
echo "test-wheel: OK (the wheel installs, its op runs, find_package finds its core, an op of one's own builds on it)"
