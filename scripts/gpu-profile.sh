#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Nsight Compute profiles of SeparableFilter's register kernel (the blur at k <= 9) on the 1080p
# images, one case a profile: float16 at k = 3 and 9 (54% and 34% of the copy on an H100, where
# float32 reaches 76% and 73%), float32 at the same k and uint8 at k = 3. Each profile holds the
# speed of light, occupancy, warp states, scheduler and instruction statistics and the memory
# workload: what bounds the 16-bit kernel.
#   scripts/gpu-profile.sh SEPARABLE_FILTER_BENCH RESULT_DIR
# SEPARABLE_FILTER_BENCH: separable_filter_bench built for the GPU (scripts/gpu-check.sh's build,
# or scripts/build-kernel-variants.sh's, carried). Needs ncu on the PATH.
set -uo pipefail
bench=${1:?separable_filter_bench}
results=$(mkdir -p "${2:?result dir}" && realpath "$2")
sections=(--section SpeedOfLight --section Occupancy --section WarpStateStats
  --section SchedulerStats --section InstructionStats --section LaunchStats
  --section MemoryWorkloadAnalysis)
failed=0
for case in "float16 3" "float16 9" "float32 3" "float32 9" "uint8 3"; do
  read -r dtype k <<<"$case"
  timeout 120 ncu --kernel-name-base demangled -k regex:SeparableRegisterKernel -c 1 \
    "${sections[@]}" "$bench" --no-cpu --dtypes "$dtype" --ks "$k" \
    >"$results/ncu_${dtype}_k$k.txt" 2>&1 || failed=1
  echo "gpu-profile: $dtype k = $k -> $results/ncu_${dtype}_k$k.txt"
done
exit "$failed"
