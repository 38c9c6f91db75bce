#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The GPU checks of a machine with an NVIDIA GPU, nvcc, CMake, PyTorch and JAX but no network and
# no TensorFlow (the device machines this project is lent):
#   scripts/gpu-check.sh RESULT_DIR [GTEST_PREFIX]
# Builds the PyTorch and JAX op libraries for the GPU seen (and, given a prefix that holds
# GoogleTest's headers, libraries and CMake package, the C++ GPU suite, run under compute-sanitizer
# by scripts/gpu-core.sh), then runs the Python tests that need no TensorFlow on the GPU, the
# sharding checks on the devices seen (a 1-device mesh takes the sharded code path), and the
# benchmarks of the FFT route's crossover (GPU, and the host's CPU on one thread) and of the
# functions' cost a call, and float16 and bfloat16 against float32. Writes RESULT_DIR/summary.txt
# and each step's log and JSON. CONSTMEM_GPU_CHECK_STEPS names the steps to run (all by default):
# build gpu-core op-benches python-tests example dequantize-bench sharding-jax sharding-torch half-bench
# fft-crossover-gpu fft-crossover-cpu call-overhead; a build directory left by an earlier call is
# reused.
set -uo pipefail
results=$(mkdir -p "${1:?result dir}" && realpath "$1")
gtest=${2:-}
cd "$(dirname "$0")/.." || exit 2
summary=$results/summary.txt
: >"$summary"
# shellcheck source=scripts/run-step.sh
source scripts/run-step.sh
export PATH=$PATH:/usr/local/cuda/bin PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$summary"
echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)" | tee -a "$summary"
failed=0
wanted=" ${CONSTMEM_GPU_CHECK_STEPS:-all} "
step() {
  [[ $wanted == " all " || $wanted == *" $1 "* ]] || return 0
  run_step "$results" "$summary" "$1" "$2" "${@:3}" || failed=1
}

args=(-G Ninja -DCONSTMEM_PYTHON="$(command -v python3)" -DCONSTMEM_WITH_GPU=ON -DCMAKE_CUDA_ARCHITECTURES=native
  -DCONSTMEM_BUILD_TF_OPS=OFF -DCONSTMEM_BUILD_TORCH_OPS=ON -DCONSTMEM_BUILD_JAX_OPS=ON
  -DCONSTMEM_BUILD_BENCH=ON -DCONSTMEM_WERROR=OFF
  -DCONSTMEM_COPY_TO_PACKAGE=ON -DCONSTMEM_INSTALL_PACKAGE=OFF -DCONSTMEM_PORTABLE_LINK=OFF)
targets=(_constmem_torch _constmem_jax)
if [ -n "$gtest" ]; then
  args+=(-DCONSTMEM_BUILD_TESTS=ON -DCONSTMEM_BUILD_GPU_TESTS=ON -DCONSTMEM_BUILD_UNSAFE_VARIANT=ON
    -DCMAKE_PREFIX_PATH="$(realpath "$gtest")" -DCONSTMEM_TOOLS_CUDA_ARCHITECTURES=native)
  targets+=(core_gpu_test core_reliability_gpu_test frobulate_gpu_test ops_gpu_test
    separable_filter_gpu_test upfirdn_gpu_test capture_gpu_test capture_gpu_test_unsafe
    separable_filter_bench upfirdn_bench ops_bench upload_bench)
else
  args+=(-DCONSTMEM_BUILD_TESTS=OFF)
fi
step build 'error' bash -c "cmake -S . -B build-gpu ${args[*]} && cmake --build build-gpu -j$(nproc) --target ${targets[*]}"
if [ -n "$gtest" ]; then
  step gpu-core 'passed|FAILED|ERROR SUMMARY' scripts/gpu-core.sh build-gpu "$results/core"
  benches=()
  for bench in separable_filter_bench upfirdn_bench ops_bench; do
    benches+=("$(find build-gpu -name "$bench" -type f | head -1)")
  done
  step op-benches 'float16|bfloat16|error' bash -c "${benches[0]} --no-cpu && ${benches[1]} --no-cpu \
    && ${benches[2]}"
fi
counts='passed|failed|RESULT'
step python-tests "$counts" python3 -m pytest -q -p no:cacheprovider -m "not slow" \
  tests/python/test_fft_route.py tests/python/test_upfirdn.py tests/python/test_torch.py \
  tests/python/test_jax.py tests/python/test_separable_filter.py tests/python/test_sharding_plan.py \
  tests/python/test_half_precision.py
# The dequantize and quantize examples built against the build's installed package, run on the
# GPU (eagerly, under CUDA graphs and torch.compile; against bitsandbytes where
# CONSTMEM_GPU_CHECK_PYTHONPATH adds it).
# shellcheck disable=SC2317,SC2329  # called through step
example() {
  local prefix=/tmp/constmem-install
  for component in core torch jax; do
    cmake --install build-gpu --prefix "$prefix" --component "$component" >/dev/null || return 1
  done
  cmake -S examples/custom_op -B build-gpu/custom_op -G Ninja \
    -DCONSTMEM_PYTHON="$(command -v python3)" \
    -Dconstmem_DIR="$(dirname "$(find "$prefix" -name constmemConfig.cmake | head -1)")" \
    -DCMAKE_CUDA_ARCHITECTURES=native -DAPPLY_GAIN_FRAMEWORKS="torch;jax" >/dev/null &&
    cmake --build build-gpu/custom_op -j "$(nproc)" --target _dequantize_torch _dequantize_jax \
      _quantize_torch _quantize_jax &&
    (cd examples/custom_op && APPLY_GAIN_BUILD=$OLDPWD/build-gpu/custom_op \
      PYTHONPATH=$PYTHONPATH:.:${CONSTMEM_GPU_CHECK_PYTHONPATH:-} python3 -m pytest -q \
      -p no:cacheprovider test_dequantize_torch.py test_dequantize_jax.py \
      test_quantize_torch.py test_quantize_jax.py)
}
step example "$counts" example
# The example's speed against bitsandbytes and compiled PyTorch (needs the example step's build).
step dequantize-bench ': (bitsandbytes|compiled) [0-9]' bash -c "cd examples/custom_op && APPLY_GAIN_BUILD=$PWD/build-gpu/custom_op \
  PYTHONPATH=$PYTHONPATH:.:${CONSTMEM_GPU_CHECK_PYTHONPATH:-} python3 bench_dequantize.py \
  --json $results/dequantize_bench.json"
step sharding-jax "$counts" python3 tests/gpu/sharding_jax.py
if [ -e tests/gpu/sharding_torch.py ]; then
  step sharding-torch "$counts" python3 tests/gpu/sharding_torch.py
fi
step half-bench 'float32|float16|bfloat16' python3 bench/half_precision_bench.py \
  --json "$results/half_precision.json"
step fft-crossover-gpu 'butterfly|worst' python3 bench/fft_crossover_bench.py --device cuda \
  --json "$results/fft_crossover_gpu.json"
step fft-crossover-cpu 'butterfly|worst' python3 bench/fft_crossover_bench.py --device cpu \
  --samples 262144 --json "$results/fft_crossover_cpu.json"
if [ -e bench/call_overhead_bench.py ]; then
  step call-overhead 'x|ratio' python3 bench/call_overhead_bench.py --json "$results/call_overhead.json"
fi
echo "gpu-check: $([ "$failed" = 0 ] && echo all passed || echo FAILED)" | tee -a "$summary"
exit "$failed"
