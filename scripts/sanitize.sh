#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The host code built with AddressSanitizer (everything: core host side, adapter, CPU kernels, op
# library) and UndefinedBehaviorSanitizer (the code that sees no TensorFlow header) into
# build-asan/ (-O1, line tables), without GPU kernels and without the XLA lowering (no test here
# compiles for XLA, and its headers alone take 90 s); then the C++ host tests and the CPU Python
# tests run against it. Any report fails the run. compute-sanitizer covers the GPU code (scripts/gpu-core.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${CONSTMEM_ASAN_BUILD_DIR:-build-asan}
if [ -z "${CMAKE_GENERATOR:-}" ] && command -v ninja >/dev/null && [ ! -e "$build/CMakeCache.txt" ]; then
  export CMAKE_GENERATOR=Ninja
fi
cmake -S . -B "$build" -DCONSTMEM_PYTHON="$PWD/.venv/bin/python" -DCONSTMEM_WITH_GPU=OFF \
  -DCONSTMEM_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCONSTMEM_COPY_TO_PACKAGE=OFF \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DCONSTMEM_BUILD_TORCH_OPS=OFF -DCONSTMEM_BUILD_JAX_OPS=OFF -DCONSTMEM_WITH_XLA=OFF \
  -DCONSTMEM_SANITIZE="address;undefined" \
  >/dev/null
cmake --build "$build" -j "$(nproc)" --target _constmem_ops core_host_test frobulate_cpu_test 2>&1 |
  grep -E "error|warning: .*constmem" || true
test -f "$build/_constmem_ops.so"
# TensorFlow itself is not instrumented: leaks at exit and its one-definition quirks are not ours.
export ASAN_OPTIONS=detect_leaks=0:detect_odr_violation=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd "$build" && ctest --output-on-failure -R 'core_host_test|frobulate_cpu_test')
# The ASan runtime first, and libstdc++ loaded with it so that its exception interceptor binds.
LD_PRELOAD="$(g++ -print-file-name=libasan.so):$(g++ -print-file-name=libstdc++.so.6)" \
  CONSTMEM_TENSORFLOW_LIBRARY="$PWD/$build/_constmem_ops.so" PYTHONPATH="$PWD/python" \
  .venv/bin/python -m pytest -q -p no:cacheprovider tests/python/test_frobulate.py -k "CPU" -x
