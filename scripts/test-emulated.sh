#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The CUDA kernels of SeparableFilter, Upfirdn, FirFilter and Interpolate run on the CPU through
# constmem/testing/emulated_gpu.hpp (barriers, shuffles, asynchronous copies and shared memory
# emulated, inputs fenced), bit for bit against the CPU kernels: the C++ tests labelled "emulated".
# The test command leaves the stencil ops' three out of its build to stay within its time (a fifth
# of the build's compile time); .ci/run runs this after its build. Needs nvcc's headers (CUDA's
# types), no GPU. Arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
CONSTMEM_EMULATED_TESTS=ON scripts/build.sh --target emulated_gpu_test tile_staging_emulated_test interpolate_emulated_test \
  separable_filter_emulated_test upfirdn_emulated_test fir_filter_emulated_test >/dev/null
(cd "${CONSTMEM_BUILD_DIR:-build}" && ctest -L emulated --output-on-failure "$@")
echo "test-emulated: all passed in $((SECONDS - start)) s" >&2
