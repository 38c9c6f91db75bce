#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Makes NVIDIA's CV-CUDA (the strongest image-filter anchor) carriable to a GPU host without
# network, in .gpu-bundle/cvcuda/ (run where PyPI is reachable):
#   parts/   the cvcuda-cu13 wheel's files for CPython 3.12 alone (the other Pythons' bindings
#            left out), packed with xz and split into parts of at most 39 MB (three), each small enough to
#            carry in one call
#   SHA256   the packed archive's checksum
# On the GPU host, after carrying SHA256 and every part (one part a call, back to back), in the
# folder that holds them:
#   cat parts/cvcuda.tar.xz.* > cvcuda.tar.xz && sha256sum -c SHA256
#   mkdir -p /tmp/cvcuda && tar -xJf cvcuda.tar.xz -C /tmp/cvcuda
#   PYTHONPATH=/tmp/cvcuda python3 -c 'import cvcuda'
#   scripts/cvcuda-bundle.sh [VERSION]   (default 0.19.0)
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:-0.19.0}
part_bytes=${CONSTMEM_PART_BYTES:-39000000}
out=.gpu-bundle/cvcuda
rm -rf "$out"
mkdir -p "$out/download" "$out/tree" "$out/parts"
.venv/bin/python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 -d "$out/download" \
  "cvcuda-cu13==$version"
wheel=$(find "$out/download" -name 'cvcuda_cu13-*.whl' | head -1)
.venv/bin/python -m zipfile -e "$wheel" "$out/tree"
# One Python's binding: every other CPython's extension module goes.
find "$out/tree" -name '_*.cpython-*.so' ! -name '*cpython-312-*' -delete
tar -C "$out/tree" -cf - . | xz -6 -T0 >"$out/cvcuda.tar.xz"
(cd "$out" && sha256sum cvcuda.tar.xz >SHA256)
split -b "$part_bytes" -d -a 2 "$out/cvcuda.tar.xz" "$out/parts/cvcuda.tar.xz."
rm -rf "$out/download" "$out/tree" "$out/cvcuda.tar.xz"
ls -l "$out/parts"
