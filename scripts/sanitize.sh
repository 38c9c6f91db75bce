#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The host code built with AddressSanitizer (everything: core host side, adapter, CPU kernels, op
# library) and UndefinedBehaviorSanitizer (the code that sees no TensorFlow header) into
# build-asan/ (-O1, line tables), without GPU kernels and without the XLA lowering (no test here
# compiles for XLA, and its headers alone take 90 s); then the C++ host tests and the CPU Python
# tests run against it, and the fuzzers of the entry points (tests/fuzz: the XLA FFI handlers and
# the op registry's C functions, PyTorch's kernels, TensorFlow's kernels and shape functions) make
# 100000 calls. `scripts/sanitize.sh --fuzz N [SEED]` builds and runs the fuzzers alone, N calls
# (scripts/fuzz.sh). Any report fails the run. compute-sanitizer covers the GPU code
# (scripts/gpu-core.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzz_only=""
calls=100000
seed=1
if [ "${1:-}" = --fuzz ]; then
  fuzz_only=1
  calls=${2:?--fuzz takes a number of calls}
  seed=${3:-1}
fi
build=${CONSTMEM_ASAN_BUILD_DIR:-build-asan}
if [ -z "${CMAKE_GENERATOR:-}" ] && command -v ninja >/dev/null && [ ! -e "$build/CMakeCache.txt" ]; then
  export CMAKE_GENERATOR=Ninja
fi
cmake -S . -B "$build" -DCONSTMEM_PYTHON="$PWD/.venv/bin/python" -DCONSTMEM_WITH_GPU=OFF \
  -DCONSTMEM_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCONSTMEM_COPY_TO_PACKAGE=OFF \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DCONSTMEM_BUILD_TORCH_OPS=ON -DCONSTMEM_BUILD_JAX_OPS=OFF -DCONSTMEM_WITH_XLA=OFF \
  -DCONSTMEM_BUILD_FUZZ=ON \
  -DCONSTMEM_SANITIZE="address;undefined" \
  >/dev/null
cmake --build "$build" -j "$(nproc)" --target _constmem_ops core_host_test frobulate_cpu_test \
  _constmem_torch entry_fuzz 2>&1 |
  grep -E "error|warning: .*constmem" || true
test -f "$build/_constmem_ops.so"
# TensorFlow itself is not instrumented: leaks at exit and its one-definition quirks are not ours.
export ASAN_OPTIONS=detect_leaks=0:detect_odr_violation=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The ASan runtime first, and libstdc++ loaded with it so that its exception interceptor binds.
preload="$(g++ -print-file-name=libasan.so):$(g++ -print-file-name=libstdc++.so.6)"
if [ -z "$fuzz_only" ]; then
  (cd "$build" && ctest --output-on-failure -R 'core_host_test|frobulate_cpu_test')
  LD_PRELOAD=$preload CONSTMEM_TENSORFLOW_LIBRARY="$PWD/$build/_constmem_ops.so" \
    PYTHONPATH="$PWD/python" \
    .venv/bin/python -m pytest -q -p no:cacheprovider tests/python/test_frobulate.py -k "CPU" -x
fi
# The fuzzers: most calls to the C entry points (microseconds each), fewer through the frameworks.
"$build/tests/fuzz/entry_fuzz" --seed "$seed" --count $((calls * 97 / 100))
LD_PRELOAD=$preload CONSTMEM_TORCH_LIBRARY="$PWD/$build/pytorch/_constmem_torch.so" \
  PYTHONPATH="$PWD/python" .venv/bin/python tests/fuzz/fuzz_frameworks.py torch --seed "$seed" \
  --count $((calls * 25 / 1000))
LD_PRELOAD=$preload CONSTMEM_TENSORFLOW_LIBRARY="$PWD/$build/_constmem_ops.so" \
  PYTHONPATH="$PWD/python" .venv/bin/python tests/fuzz/fuzz_frameworks.py tensorflow \
  --seed "$seed" --count $((calls * 5 / 1000))
