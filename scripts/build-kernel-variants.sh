#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds a benchmark once per launch-shape variant of one op's kernels, for comparing them on a GPU.
# Needs a build (scripts/build.sh, or any configured build directory in CONSTMEM_BUILD_DIR) that
# has built the benchmark, for the GPU's architecture (CONSTMEM_VARIANT_ARCH, sm_90 by default).
#   scripts/build-kernel-variants.sh OUT_DIR NAME=DEFINES...
# CONSTMEM_VARIANT_OP names the op whose CUDA source each variant recompiles (frobulate by
# default) and CONSTMEM_VARIANT_BENCH the benchmark it links (kernel_bench); for example
#   CONSTMEM_VARIANT_OP=separable_filter CONSTMEM_VARIANT_BENCH=separable_filter_bench \
#     scripts/build-kernel-variants.sh variants v8=-DCONSTMEM_SEPARABLE_SIXTEEN_BIT_VECTOR=8
# writes variants/separable_filter_bench_v8.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1
shift
build=${CONSTMEM_BUILD_DIR:-build}
arch=${CONSTMEM_VARIANT_ARCH:-sm_90}
op=${CONSTMEM_VARIANT_OP:-frobulate}
bench=${CONSTMEM_VARIANT_BENCH:-kernel_bench}
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
mkdir -p "$out"
flags=(-O3 -DNDEBUG -std=c++17 --generate-code="arch=compute_${arch#sm_},code=[$arch]" -Iinclude -Iops -Itf)
# The benchmark's object, the op library's other CUDA objects and its CPU library.
objects=("$build/bench/CMakeFiles/$bench.dir/$bench.cu.o")
while IFS= read -r object; do
  objects+=("$object")
done < <(find "$build/CMakeFiles/constmem_ops_cuda.dir" -name '*.cu.o' ! -name "${op}_gpu.cu.o" | sort)
objects+=("$(find "$build" -name 'libconstmem_ops_cpu.a' | head -1)")
for variant in "$@"; do
  name=${variant%%=*}
  read -r -a defines <<<"${variant#*=}"
  "$nvcc" "${flags[@]}" "${defines[@]}" -c "ops/$op/${op}_gpu.cu" -o "$out/$name.o" &
done
wait
for variant in "$@"; do
  name=${variant%%=*}
  "$nvcc" -arch="$arch" "$out/$name.o" "${objects[@]}" -cudart static -lpthread -o "$out/${bench}_$name"
done
ls "$out"
