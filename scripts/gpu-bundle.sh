#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Makes the offline GPU test bundle in .gpu-bundle/ (run where PyPI is reachable):
#   small/   op libraries (test builds, CONSTMEM_TEST_HOOKS=ON: safe and hazard-tracking-off,
#            sm_90 code), C++ GPU tests and benchmarks, CUDA 12 library stand-ins, small wheels,
#            the project's Python, tests and scripts, and MANIFEST.sha256
#   parts/   the TensorFlow wheel for CPython 3.12, unpacked without its C++ headers and packed
#            again with xz (about 310 MB instead of 573), split into parts of at most 60 MB
# Carry small/ and every part to the GPU host, then run scripts/gpu-run.sh there.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.gpu-bundle
part_bytes=${CONSTMEM_PART_BYTES:-60000000}
tf_version=$(sed -n 's/.*"tensorflow==\([0-9.]*\)".*/\1/p' pyproject.toml | head -1)
rm -rf "$out/small" "$out/parts"
mkdir -p "$out/small/bin" "$out/small/lib" "$out/small/wheels" "$out/small/cuda12" "$out/parts" "$out/download"

# 1. Build the op libraries and C++ GPU programs with sm_90 code (plus PTX for newer GPUs).
scripts/setup.sh
keras_version=$(.venv/bin/python -c 'import keras; print(keras.__version__)')
CONSTMEM_BUILD_DIR=build-gpu CONSTMEM_CUDA_ARCHS="${CONSTMEM_CUDA_ARCHS:-90-real;90-virtual}" \
  CONSTMEM_CMAKE_ARGS="-DCONSTMEM_BUILD_UNSAFE_VARIANT=ON -DCONSTMEM_TEST_HOOKS=ON" scripts/build.sh
cp build-gpu/_constmem_ops.so build-gpu/_constmem_ops.json build-gpu/_constmem_ops_unsafe.so "$out/small/lib/"
# The PyTorch and JAX op libraries, for the host's own torch and jax.
cp build-gpu/pytorch/_constmem_torch.so build-gpu/pytorch/_constmem_torch.json \
  build-gpu/xla_ffi/_constmem_jax.so build-gpu/xla_ffi/_constmem_jax.json "$out/small/lib/"
cp build-gpu/tests/cpp/core_gpu_test build-gpu/tests/cpp/core_reliability_gpu_test \
  build-gpu/tests/cpp/frobulate_gpu_test build-gpu/tests/cpp/frobulate_cpu_test \
  build-gpu/tests/cpp/ops_gpu_test build-gpu/tests/cpp/ops_cpu_test build-gpu/tests/cpp/capture_gpu_test \
  build-gpu/tests/cpp/separable_filter_gpu_test build-gpu/tests/cpp/upfirdn_gpu_test \
  build-gpu/tests/cpp/capture_gpu_test_unsafe build-gpu/c_api_frobulate build-gpu/cc_saved_model \
  build-gpu/c_api_saved_model "$out/small/bin/"
find build-gpu/bench -maxdepth 1 -type f -perm -u+x -exec cp {} "$out/small/bin/" \;
# The out-of-tree example op for each framework, built from an installed constmem as a user would
# build it.
rm -rf build-gpu/prefix build-gpu/custom_op
for component in core tf_adapter torch jax; do
  cmake --install build-gpu --component "$component" --prefix build-gpu/prefix >/dev/null
done
PATH="$PATH:/usr/local/cuda/bin" cmake -S examples/custom_op -B build-gpu/custom_op \
  -Dconstmem_DIR="$PWD/build-gpu/prefix/lib/cmake/constmem" -DCONSTMEM_PYTHON="$PWD/.venv/bin/python" \
  -DCMAKE_CUDA_ARCHITECTURES="${CONSTMEM_CUDA_ARCHS:-90-real;90-virtual}" >/dev/null
cmake --build build-gpu/custom_op -j "$(nproc)" >/dev/null
cp build-gpu/custom_op/_apply_gain_*.so build-gpu/custom_op/_causal_conv1d_*.so "$out/small/lib/"

# 2. Wheels for CPython 3.12 on manylinux x86_64: TensorFlow, Keras (the version tested here), the
#    pieces a GPU host without them may lack, and the real CUDA 12 runtime.
platform=(--only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64
  --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
.venv/bin/python -m pip download -q --no-deps "${platform[@]}" -d "$out/download" \
  "tensorflow==$tf_version" nvidia-cuda-runtime-cu12==12.5.82 astunparse gast google_pasta termcolor \
  "protobuf>=6.31.1,<8" "ml_dtypes>=0.5.1,<1" "numpy>=1.26,<2.4" "flatbuffers>=25.9.23" absl-py \
  opt_einsum wrapt typing_extensions packaging six "keras==$keras_version" namex optree
for wheel in "$out"/download/*.whl; do
  case "$(basename "$wheel")" in
    tensorflow-*) ;;
    *) cp "$wheel" "$out/small/wheels/" ;;
  esac
done
# The headers are for building ops, not running them; xz packs the rest far tighter than the
# wheel's zip (about 12 minutes on two cores, so the result is kept between runs).
packed=$out/cache/tensorflow-$tf_version-noheaders.tar.xz
if [ ! -f "$packed" ]; then
  mkdir -p "$out/cache" && rm -rf "$out/unpacked" && mkdir "$out/unpacked"
  (cd "$out/unpacked" && unzip -q ../download/tensorflow-*.whl && rm -rf tensorflow/include)
  tar -C "$out/unpacked" -cf - . | xz -9 -T0 >"$packed.tmp" && mv "$packed.tmp" "$packed"
  rm -rf "$out/unpacked"
fi
(cd "$out/parts" && split -b "$part_bytes" -d -a 2 "$(realpath "../cache/$(basename "$packed")")" tensorflow.tar.xz.part)
sha256sum "$packed" | sed 's/ .*//' >"$out/small/tensorflow.tar.xz.sha256"

# 3. Stand-ins for the CUDA 12 libraries TensorFlow dlopens but constmem never calls.
for soname in libcublas.so.12 libcublasLt.so.12 libcufft.so.11 libcusolver.so.11 libcusparse.so.12 libcudnn.so.9; do
  gcc -shared -fPIC -Wl,-soname,"$soname" -o "$out/small/cuda12/$soname" scripts/cuda-stubs/stub.c
done

# 4. The project's sources, Python package, tests and scripts, so the bundle runs from any checkout
#    (the docs test reads the sources its excerpts come from; the install test, the headers).
tar -cf "$out/small/project.tar" --exclude=__pycache__ --exclude='*.so' python tests scripts examples bench docs \
  include ops tf pytorch xla_ffi cmake CMakeLists.txt pyproject.toml README.md CHANGELOG.md LICENSE
(cd "$out/small" && find . -type f ! -name MANIFEST.sha256 -print0 | sort -z | xargs -0 sha256sum >../MANIFEST.tmp &&
  mv ../MANIFEST.tmp MANIFEST.sha256)
(cd "$out/parts" && sha256sum tensorflow.tar.xz.part* >../small/PARTS.sha256)
git rev-parse HEAD >"$out/small/COMMIT" 2>/dev/null || echo unknown >"$out/small/COMMIT"
du -sh "$out/small" "$out/parts"
ls "$out/parts"
