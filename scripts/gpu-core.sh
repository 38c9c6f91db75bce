#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The C++ GPU suite (no TensorFlow): core, reliability, capture and every op's launcher tests,
# compute-sanitizer (memcheck, racecheck, synccheck, initcheck) over each, and the upload benchmark. Run on a machine
# with an NVIDIA GPU.
#   [CONSTMEM_SANITIZERS="memcheck ..."] scripts/gpu-core.sh BIN_DIR RESULT_DIR
# CONSTMEM_SANITIZERS names the compute-sanitizer tools to run (all four by default; empty: none).
# BIN_DIR holds the test and benchmark binaries (build/ layout also works).
set -uo pipefail
bin=${1:?bin dir}
results=${2:?result dir}
mkdir -p "$results"
find_bin() { find "$bin" -name "$1" -type f | head -1; }
core=$(find_bin core_gpu_test)
frob=$(find_bin frobulate_gpu_test)
ops=$(find_bin ops_gpu_test)
separable=$(find_bin separable_filter_gpu_test)
upfirdn=$(find_bin upfirdn_gpu_test)
reliability=$(find_bin core_reliability_gpu_test)
capture=$(find_bin capture_gpu_test)
capture_unsafe=$(find_bin capture_gpu_test_unsafe)
bench=$(find_bin upload_bench)
summary="$results/core_summary.txt"
: >"$summary"
# shellcheck source=scripts/run-step.sh
source "$(dirname "$0")/run-step.sh"
failed=0
run() { run_step "$results" "$summary" "$1" '^\[  PASSED  \]|^\[  FAILED  \]|^\[  SKIPPED \] [0-9]|ERROR SUMMARY|^\[stress\]|^\[multi-device\]' "${@:2}" || failed=1; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$summary"
run core_gpu_test "$core" --gtest_output=json:"$results/core_gpu_test.json"
run core_reliability_gpu_test "$reliability" --gtest_output=json:"$results/core_reliability_gpu_test.json"
run frobulate_gpu_test "$frob" --gtest_output=json:"$results/frobulate_gpu_test.json"
run ops_gpu_test "$ops" --gtest_output=json:"$results/ops_gpu_test.json"
run separable_filter_gpu_test "$separable" --gtest_output=json:"$results/separable_filter_gpu_test.json"
run upfirdn_gpu_test "$upfirdn" --gtest_output=json:"$results/upfirdn_gpu_test.json"
run capture_gpu_test "$capture" --gtest_output=json:"$results/capture_gpu_test.json"
# With hazard tracking off, captured launches share a bank slot: the concurrent test must fail.
if [ -z "$capture_unsafe" ]; then
  echo "capture_unsafe_must_fail: no capture_gpu_test_unsafe in $bin (configure with" \
    "-DCONSTMEM_BUILD_UNSAFE_VARIANT=ON)" | tee -a "$summary"
  failed=1
elif run_step "$results" "$summary" capture_unsafe_must_fail '^\[  PASSED  \]|^\[  FAILED  \]|mismatching' \
  "$capture_unsafe" --gtest_filter='CapturedConcurrency.*'; then
  echo "capture_unsafe_must_fail: the concurrent capture test passed without its protection" |
    tee -a "$summary"
  failed=1
fi
if command -v compute-sanitizer >/dev/null; then
  export CONSTMEM_STRESS_LAUNCHES=${CONSTMEM_SANITIZER_LAUNCHES:-2000} CONSTMEM_SANITIZER_RUN=1
  for tool in ${CONSTMEM_SANITIZERS-memcheck racecheck synccheck initcheck}; do
    run "sanitizer_${tool}_core" compute-sanitizer --tool "$tool" --error-exitcode 1 "$core"
    run "sanitizer_${tool}_reliability" compute-sanitizer --tool "$tool" --error-exitcode 1 "$reliability"
    run "sanitizer_${tool}_frobulate" compute-sanitizer --tool "$tool" --error-exitcode 1 "$frob" \
      --gtest_filter='FrobulateErrors.*:FrobulatePlacement.*:Cases/FrobulateGpu.BitwiseEqualToTheCpuKernel/1*'
    run "sanitizer_${tool}_ops" compute-sanitizer --tool "$tool" --error-exitcode 1 "$ops"
    # Every case but the largest images and the longest rate-pair sweeps, which take minutes
    # under the sanitizer and run the same code as the cases kept.
    run "sanitizer_${tool}_separable_filter" compute-sanitizer --tool "$tool" --error-exitcode 1 \
      "$separable" --gtest_filter='-*LargeImagesAndLongFilters*'
    run "sanitizer_${tool}_upfirdn" compute-sanitizer --tool "$tool" --error-exitcode 1 "$upfirdn" \
      --gtest_filter='-*RatesAndTapCounts*:*ResamplePolyFilters*'

    run "sanitizer_${tool}_capture" compute-sanitizer --tool "$tool" --error-exitcode 1 "$capture"
  done
  unset CONSTMEM_STRESS_LAUNCHES CONSTMEM_SANITIZER_RUN
fi
run upload_bench "$bench" --json "$results/upload_bench.json"
grep -A200 '^what' "$results/upload_bench.log" | head -80
exit "$failed"
