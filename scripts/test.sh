#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The test command: sets up, builds (including the GPU kernels when nvcc exists), then runs the
# C++ tests (the GPU tests only where a GPU is seen) beside the installed wheel (built in the same
# build directory), then the Python tests (on every device each framework sees, in parallel), but
# those marked slow (scripts/test-slow.sh runs them). The host code under AddressSanitizer and
# UndefinedBehaviorSanitizer is scripts/sanitize.sh's, which .ci/run runs after this command: on
# two cores it was a third process beside the wheel step and the C++ tests. Each step says how long
# it took. Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
step() {  # name, command...
  local start=$SECONDS
  "${@:2}"
  echo "test: $1 took $((SECONDS - start)) s" >&2
}
# Steps that run beside the wheel step, which has one core idle for much of its time. Each is a
# process group of its own (job control on for this one job), so that a failing step ends them
# all; the output of each is shown when it is done.
names=() pids=() logs=()
beside() {  # name, command...
  logs+=("$(mktemp)")
  set -m
  (step "$@") >"${logs[-1]}" 2>&1 &
  set +m
  names+=("$1") pids+=($!)
}
finish() {
  local pid
  for pid in "${pids[@]}"; do [ -z "$pid" ] || kill -- -"$pid" 2>/dev/null || true; done
  rm -f "${logs[@]}"
}
trap finish EXIT
step setup scripts/setup.sh
# Every compiler CMake runs here goes through ccache where it is installed: a fresh clone compiles
# only what changed since the last build on this machine (the paths are taken relative to the
# clone, and the debug information's directory is left out of the hash, so that clones elsewhere
# share the entries).
if command -v ccache >/dev/null; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache \
    CMAKE_CUDA_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
fi
# The benchmarks, which no test runs, are compiled by .ci/run and by scripts/build.sh alone; so are
# the C++ GPU tests where no GPU is seen (they would only skip themselves). The stencil ops' kernels
# on the emulated GPU, a fifth of the build's compile time, are scripts/test-emulated.sh's.
step build env CONSTMEM_BUILD_BENCH=OFF CONSTMEM_EMULATED_TESTS=OFF CONSTMEM_GPU_TESTS=if-gpu \
  scripts/build.sh
run_ctest() { (cd "${CONSTMEM_BUILD_DIR:-build}" && ctest --output-on-failure "$@"); }
# The C API's test loads build/'s op library, which the wheel step relinks: it runs first.
step c-api run_ctest -R '^c_api_'
beside ctest run_ctest -E '^c_api_'
step wheel scripts/test-wheel.sh
for i in "${!pids[@]}"; do
  status=0
  wait "${pids[i]}" || status=$?
  pids[i]=""
  cat "${logs[i]}" >&2
  [ "$status" = 0 ] || { echo "test: the ${names[i]} step failed" >&2; exit "$status"; }
done
# One pytest worker per core, at most four (each imports TensorFlow, PyTorch and JAX); a worker
# that runs out of tests takes half of the queue of another.
workers=$(($(nproc) < 4 ? $(nproc) : 4))
step pytest env PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" .venv/bin/python -m pytest \
  tests/python -q -n "$workers" --dist worksteal -m "not slow" "$@"
echo "test: all passed in $SECONDS s" >&2
