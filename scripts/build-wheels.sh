#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The release build: constmem's distributions for one CUDA toolkit, into OUT (default dist/).
#
#   scripts/build-wheels.sh                       # CUDA 13 (/usr/local/cuda), every release arch
#   scripts/build-wheels.sh --cuda-root "$(scripts/cuda12-toolkit.sh | tail -1)"   # CUDA 12
#
# Builds the op libraries of the frameworks that PYTHON (default .venv/bin/python) has, linked to
# run on glibc 2.28 (CONSTMEM_PORTABLE_LINK), installs them with the core's headers and CMake
# package, assembles the wheels (scripts/make_wheels.py: constmem, py3-none-any, and
# constmem-<framework>-cu<N>, py3-none-linux), then has auditwheel check and retag each op
# library's wheel as manylinux_2_28 (libtorch, libc10, TensorFlow's libraries, libcuda and
# libcudart excluded: the framework and the driver provide them). auditwheel's report of each
# goes to OUT/auditwheel.txt. Options:
#   --build-dir DIR   the CMake build directory (default build-release; the test command passes
#                     its development build's, whose generator and architectures it keeps)
#   --archs LIST      CUDA architectures (CMake syntax; default every release architecture)
#   --out DIR         where the wheels go
#   --no-core         the op libraries' wheels alone (a second CUDA's build)
#   --no-sdist        no source distribution (the test command's build, to save its time)
#   --check-only      the CUDA code unoptimized (CONSTMEM_CUDA_CHECK_ONLY): wheels whose kernels
#                     never run (the test command's where no GPU is seen), never a release
set -euo pipefail
cd "$(dirname "$0")/.."

build="build-release"
cuda_root=""
archs="75-real;80-real;86-real;89-real;90-real;90-virtual"
out=dist
core=(--variants "cu13,cu12")
sdist=1
check_only=OFF
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build=$2; shift 2 ;;
    --cuda-root) cuda_root=$2; shift 2 ;;
    --archs) archs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --no-core) core=(--no-core); sdist=""; shift ;;
    --no-sdist) sdist=""; shift ;;
    --check-only) check_only=ON; shift ;;
    *) echo "build-wheels: unknown argument $1" >&2; exit 2 ;;
  esac
done
python=${PYTHON:-$PWD/.venv/bin/python}
# The toolkit: --cuda-root's, else the nvcc on the path or in /usr/local/cuda (as build.sh finds it:
# naming it anew in an existing build directory would make CMake start that directory afresh).
toolkit=()
if [ -n "$cuda_root" ]; then
  nvcc=$cuda_root/bin/nvcc
  toolkit=(-DCMAKE_CUDA_COMPILER="$nvcc" -DCUDAToolkit_ROOT="$cuda_root")
else
  export PATH="$PATH:/usr/local/cuda/bin"
  nvcc=$(command -v nvcc || true)
fi
[ -x "$nvcc" ] || { echo "build-wheels: no nvcc (${nvcc:-not on the path})" >&2; exit 1; }
cuda_major=$("$nvcc" --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
variant=cu$cuda_major

# A build directory keeps its generator; a new one takes Ninja where it is installed.
generator=$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
if [ -z "$generator" ] && command -v ninja >/dev/null; then generator=Ninja; fi
cmake -S . -B "$build" ${generator:+-G "$generator"} -DCMAKE_BUILD_TYPE=Release \
  -DCONSTMEM_PYTHON="$python" -DCONSTMEM_WITH_GPU=ON "${toolkit[@]}" \
  -DCMAKE_CUDA_ARCHITECTURES="$archs" -DCONSTMEM_CUDA_CHECK_ONLY="$check_only" \
  -DCONSTMEM_BUILD_TESTS=OFF -DCONSTMEM_BUILD_BENCH=OFF -DCONSTMEM_TEST_HOOKS=OFF \
  -DCONSTMEM_BUILD_UNSAFE_VARIANT=OFF -DCONSTMEM_COPY_TO_PACKAGE=OFF \
  -DCONSTMEM_INSTALL_PACKAGE=ON -DCONSTMEM_PORTABLE_LINK=ON >/dev/null
cmake --build "$build" -j "$(nproc)"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for component in core tf_adapter torch jax python; do
  cmake --install "$build" --component "$component" --prefix "$stage" >/dev/null
done
mkdir -p "$out"
raw=$stage/raw
"$python" scripts/make_wheels.py --stage "$stage" --out "$raw" --variant "$variant" "${core[@]}" \
  >/dev/null

# The core is pure Python. Each op library's wheel gets the lowest manylinux tag auditwheel
# allows, manylinux_2_28 where the symbols allow that or older (the tag PyTorch's wheels have).
report=$out/auditwheel.txt
: >"$report"
for wheel in "$raw"/*.whl; do
  case "$wheel" in *-none-any.whl) cp "$wheel" "$out/"; continue ;; esac
  shown=$("$python" -m auditwheel show "$wheel" 2>&1)
  echo "$shown" >>"$report"
  allowed=$(echo "$shown" | tr -s ' \n' ' ' | sed -n 's/.*platform tag to "\([^"]*\)".*/\1/p')
  minor=$(echo "$allowed" | sed -n 's/^manylinux_2_\([0-9]*\)_x86_64$/\1/p')
  [ -n "$minor" ] || { echo "build-wheels: auditwheel allows no manylinux tag for $wheel" >&2; exit 1; }
  platform=manylinux_2_$((minor < 28 ? 28 : minor))_x86_64
  [ "$minor" -le 28 ] || echo "build-wheels: $(basename "$wheel") is held at $allowed" | tee -a "$report" >&2
  PATH="$(dirname "$python"):$PATH" "$python" -m auditwheel repair --plat "$platform" -w "$out" \
    --exclude 'libtorch*.so*' --exclude 'libc10*.so*' --exclude 'libtensorflow*.so*' \
    --exclude libcuda.so.1 --exclude 'libcudart.so*' "$wheel" >>"$report" 2>&1 ||
    { cat "$report" >&2; exit 1; }
done
# The source distribution, for a framework release no op library's wheel fits (it builds them all
# against the frameworks installed: pip install --no-build-isolation --no-binary constmem ...).
if [ -n "$sdist" ]; then
  "$python" -m uv build -q --sdist --out-dir "$out"
  rm -f "$out/.gitignore"
fi
echo "build-wheels: CUDA $cuda_major wheels in $out:" >&2
ls "$out"/*.whl "$out"/*.tar.gz 2>/dev/null || true
