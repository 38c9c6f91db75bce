#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds kernel_bench once per Frobulate launch-shape variant, for comparing them on a GPU with
# `kernel_bench --quick`. Needs a configured build (scripts/build.sh) in CONSTMEM_BUILD_DIR.
#   scripts/build-kernel-variants.sh OUT_DIR NAME=DEFINES... e.g. v12u8=-DCONSTMEM_FROBULATE_VECTORS_PER_THREAD=12
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1
shift
build=${CONSTMEM_BUILD_DIR:-build}
arch=${CONSTMEM_VARIANT_ARCH:-sm_90}
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
mkdir -p "$out"
flags=(-O3 -std=c++17 -arch="$arch" -Iinclude -Iops -Itf)
objects=("$build/bench/CMakeFiles/kernel_bench.dir/kernel_bench.cu.o"
  "$build/CMakeFiles/constmem_ops_cuda.dir/tf/adapter/adapter_gpu.cu.o")
for variant in "$@"; do
  name=${variant%%=*}
  read -r -a defines <<<"${variant#*=}"
  "$nvcc" "${flags[@]}" "${defines[@]}" -c ops/frobulate/frobulate_gpu.cu -o "$out/$name.o" &
done
wait
for variant in "$@"; do
  name=${variant%%=*}
  "$nvcc" -arch="$arch" "$out/$name.o" "${objects[@]}" -cudart static -o "$out/kernel_bench_$name"
done
ls "$out"
