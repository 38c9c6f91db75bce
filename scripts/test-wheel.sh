#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The package as a user installs it: builds the distributions with the release script
# (scripts/build-wheels.sh, against .venv's TensorFlow, PyTorch and JAX), installs each framework's
# alone into an empty environment with no compiler on the path and runs its ops there
# (scripts/test-clean-envs.sh), and beside that builds and tests examples/custom_op, an op of its
# own for TensorFlow, PyTorch and JAX, from the installed package alone (with CMake, through
# find_package and constmem.sysconfig, and with torch.utils.cpp_extension). tests/consumer, the
# core alone through find_package, is tests/python/test_install.py's.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
clean_envs="" installed=""
trap '[ -z "$clean_envs" ] || kill -- -"$clean_envs" 2>/dev/null || true
  [ -z "$installed" ] || kill "$installed" 2>/dev/null || true; rm -rf "$work"' EXIT
# Built in the development build's directory (scripts/build.sh) for its CUDA architectures:
# build-wheels.sh's release configuration compiles with the same flags (a development build has no
# test hooks either), so only the portable link runs again; build.sh configures it back. The example
# op below compiles for the first of them.
build=${CONSTMEM_BUILD_DIR:-build}
archs=$(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
archs=${archs:-75-virtual}
# A build that only checks its CUDA code (scripts/build.sh's where no GPU is seen) makes wheels
# of the same, and the example op's CUDA code compiles unoptimized too.
check_only=()
example_flags=()
if grep -q '^CONSTMEM_CUDA_CHECK_ONLY:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
  check_only=(--check-only)
  example_flags=(-DCMAKE_CUDA_FLAGS="-Xcicc -O0" -DCMAKE_CUDA_FLAGS_RELEASE="-O0 -DNDEBUG")
fi
scripts/build-wheels.sh --build-dir "$build" --archs "$archs" --out "$work/wheels" --no-sdist \
  "${check_only[@]}" >/dev/null
# The op libraries' wheels: manylinux_2_28 where the symbols allow it (not TensorFlow's, which
# uses the libstdc++ TensorFlow loads: docs/design.md).
for framework in torch jax; do
  ls "$work"/wheels/constmem_"$framework"_cu*-py3-none-*manylinux_2_28_x86_64*.whl >/dev/null
done
ls "$work"/wheels/constmem-*-py3-none-any.whl >/dev/null
# The clean environments take one core: beside the rest, in a process group of their own (job
# control on for this one job) that a failure here ends.
set -m
scripts/test-clean-envs.sh "$work/wheels" >"$work/clean-envs.log" 2>&1 &
clean_envs=$!
set +m
.venv/bin/python -m pip install -q --no-deps --target "$work/site" "$work"/wheels/*.whl
cd "$work"  # away from the source tree, so that only the installed package can be imported
# The op runs from the installed package, beside the example's configure (each is mostly one
# process importing frameworks).
PYTHONPATH="$work/site" TF_CPP_MIN_LOG_LEVEL=3 "$OLDPWD/.venv/bin/python" - \
  >"$work/installed.log" 2>&1 <<'PY' &
import constmem, constmem.sysconfig as s, constmem.tensorflow as cm
assert constmem.__file__.startswith(s.get_include().rsplit("/constmem/", 1)[0])
assert cm.frobulate([1.0], [2, 3]).numpy().tolist() == [6.0]
bindings = constmem.build_info()["bindings"]
assert {b["distribution"] for b in bindings.values()} == {
    f"constmem-{name}-cu13" for name in ("tensorflow", "torch", "jax")
}, bindings
# A shipped build has no test hooks: no fault injection, no staging checks.
assert not any(b["test_hooks"] for b in bindings.values()), bindings
assert not hasattr(cm._loader.ops(), "constmem_inject_fault_for_testing")
PY
installed=$!
cmake_dir=$(PYTHONPATH="$work/site" "$OLDPWD/.venv/bin/python" -c \
  'import constmem.sysconfig as s; print(s.get_cmake_dir())')
PATH="$PATH:/usr/local/cuda/bin" cmake -S "$OLDPWD/examples/custom_op" -B "$work/custom_op" \
  -Dconstmem_DIR="$cmake_dir" -DCONSTMEM_PYTHON="$OLDPWD/.venv/bin/python" \
  -DCMAKE_CUDA_ARCHITECTURES="${archs%%;*}" -DCONSTMEM_PORTABLE_LINK=ON "${example_flags[@]}" >/dev/null
status=0
wait "$installed" || status=$?
installed=""
[ "$status" = 0 ] ||
  { cat "$work/installed.log" >&2; echo "test-wheel: the installed package failed" >&2; exit 1; }
cmake --build "$work/custom_op" -j "$(nproc)" >/dev/null
# The installed helpers' portable link: the example's libraries need no glibc newer than 2.28, and
# the PyTorch and JAX ones no libstdc++ at all (TensorFlow's the one TensorFlow's wheel needs).
newest() { { objdump -T "$1" | grep -o "$2[0-9.]*" || true; } | sort -uV | tail -1; }
for library in "$work"/custom_op/_apply_gain_*.so "$work"/custom_op/_causal_conv1d_*.so \
  "$work"/custom_op/_dequantize_*.so "$work"/custom_op/_quantize_*.so; do
  glibc=$(newest "$library" GLIBC_)
  [ "$(printf '%s\nGLIBC_2.28\n' "$glibc" | sort -V | tail -1)" = GLIBC_2.28 ] ||
    { echo "test-wheel: $library needs $glibc (the portable link allows GLIBC_2.28)" >&2; exit 1; }
  glibcxx=$(newest "$library" GLIBCXX_)
  case $library in
    *_tf.so) [ "$(printf '%s\nGLIBCXX_3.4.22\n' "$glibcxx" | sort -V | tail -1)" = GLIBCXX_3.4.22 ] ;;
    *) [ -z "$glibcxx" ] ;;
  esac || { echo "test-wheel: $library needs $glibcxx" >&2; exit 1; }
done
# A worker a core: the clean environments are done by now (they take less than the example's build).
# A worker that runs out of tests takes half of another's queue: a few tests take seconds each.
APPLY_GAIN_BUILD="$work/custom_op" PYTHONPATH="$work/site" \
  "$OLDPWD/.venv/bin/python" -m pytest -q -n "$(nproc)" --dist worksteal \
  -p no:cacheprovider --rootdir "$OLDPWD/examples/custom_op" "$OLDPWD/examples/custom_op"
status=0
wait "$clean_envs" || status=$?
clean_envs=""
cat "$work/clean-envs.log" >&2
[ "$status" = 0 ] || { echo "test-wheel: a clean environment failed" >&2; exit "$status"; }
echo "test-wheel: OK (each framework alone runs its ops from the wheels; an op of one's own builds on the installed package; CMake package in $cmake_dir)"
