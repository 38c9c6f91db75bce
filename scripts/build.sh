#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures and builds the op library, C++ tests and benchmarks into build/ (incrementally: only
# what changed is rebuilt).
# CUDA code is compiled whenever nvcc exists (no GPU needed). The development build compiles the
# architectures its code differs for: sm_75 (no asynchronous copies) to PTX, which checks its code
# path at a third of the cost of machine code, and sm_90 (bulk copies) to machine code, or on a
# machine with a GPU that GPU's own (the C++ tests and benchmarks, which only a GPU runs, sm_90
# alone on a machine without one); a release (pip install .) builds sm_75, 80, 86, 89, 90 and
# PTX. CONSTMEM_CUDA_ARCHS overrides the list (CMake's CMAKE_CUDA_ARCHITECTURES syntax).
set -euo pipefail
cd "$(dirname "$0")/.."

build=${CONSTMEM_BUILD_DIR:-build}
# Ninja where it is installed; a build directory keeps the generator it was made with.
if [ -z "${CMAKE_GENERATOR:-}" ] && command -v ninja >/dev/null && [ ! -e "$build/CMakeCache.txt" ]; then
  export CMAKE_GENERATOR=Ninja
fi
# The development configuration, also where scripts/test-wheel.sh left the release one.
# CONSTMEM_BUILD_BENCH=OFF leaves the benchmarks out, CONSTMEM_EMULATED_TESTS=OFF the stencil ops'
# kernels' tests on the CPU (scripts/test-emulated.sh's), CONSTMEM_GPU_TESTS=if-gpu the C++ GPU tests
# and sm_90's machine code where no GPU is seen (the test command's build: nothing there would run
# them).
gpu_seen=""
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then gpu_seen=1; fi
gpu_tests=ON
if [ "${CONSTMEM_GPU_TESTS:-}" = if-gpu ] && [ -z "$gpu_seen" ]; then gpu_tests=OFF; fi
args=(-DCONSTMEM_PYTHON="$PWD/.venv/bin/python" -USKBUILD -DCONSTMEM_BUILD_TESTS=ON
  -DCONSTMEM_BUILD_GPU_TESTS="$gpu_tests" -DCONSTMEM_BUILD_BENCH="${CONSTMEM_BUILD_BENCH:-ON}"
  -DCONSTMEM_BUILD_EMULATED_TESTS="${CONSTMEM_EMULATED_TESTS:-ON}"
  -DCONSTMEM_COPY_TO_PACKAGE=ON -DCONSTMEM_INSTALL_PACKAGE=OFF -DCONSTMEM_PORTABLE_LINK=OFF)
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="$PATH:/usr/local/cuda/bin"
  args+=(-DCONSTMEM_WITH_GPU=ON)
  archs=${CONSTMEM_CUDA_ARCHS:-}
  tools_archs=""
  check_only=OFF
  if [ -z "$archs" ]; then
    archs="75-virtual;90-real"
    # Without a GPU the C++ tests and benchmarks cannot run: they are compiled for one of them.
    tools_archs=90-real
    if [ -n "$gpu_seen" ]; then
      archs=native
      tools_archs=""
    elif [ "$gpu_tests" = OFF ]; then
      # The test command's build where nothing runs GPU code: every kernel compiles to sm_75's
      # PTX, but the sm_90 paths (.ci/run's build compiles those), at about half the cost, and
      # unoptimized (CONSTMEM_CUDA_CHECK_ONLY: a tenth of the cost again).
      archs=75-virtual
      check_only=ON
    fi
  fi
  # CONSTMEM_CUDA_CHECK_ONLY=ON or OFF overrides (.ci/run's build, which no GPU runs either).
  check_only=${CONSTMEM_CUDA_CHECK_ONLY:-$check_only}
  args+=(-DCMAKE_CUDA_ARCHITECTURES="$archs" -DCONSTMEM_TOOLS_CUDA_ARCHITECTURES="$tools_archs"
    -DCONSTMEM_CUDA_CHECK_ONLY="$check_only")
else
  echo "build: no nvcc found; building the CPU kernels only" >&2
  args+=(-DCONSTMEM_WITH_GPU=OFF)
fi
# CONSTMEM_CMAKE_ARGS: extra -D options, split on spaces.
read -r -a extra <<<"${CONSTMEM_CMAKE_ARGS:-}"
cmake -S . -B "$build" "${args[@]}" "${extra[@]}" >/dev/null
# Arguments go to `cmake --build` (for example `--target _constmem_ops`).
cmake --build "$build" -j "$(nproc)" "$@"
