#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A CUDA 12 toolkit for building kernels that run on older drivers (R525+), taken from Debian
# trixie's non-free nvidia-cuda-toolkit (NVIDIA's binaries, repackaged) and unpacked into a cache
# directory: nothing is installed into the system, because trixie's packages would pull trixie's
# libc6 onto a bookworm machine. The binaries need only glibc >= 2.34 and libstdc++.
#   scripts/cuda12-toolkit.sh            # prints the toolkit root on its last line
# Then: cmake -DCMAKE_CUDA_COMPILER=<root>/bin/nvcc -DCUDAToolkit_ROOT=<root> ...
# CONSTMEM_CUDA12_ROOT: where the toolkit goes (default ~/.cache/constmem/cuda12).
# CONSTMEM_CUDA12_SUITE: the Debian suite to take it from (default trixie).
set -euo pipefail

root=${CONSTMEM_CUDA12_ROOT:-${HOME}/.cache/constmem/cuda12}
suite=${CONSTMEM_CUDA12_SUITE:-trixie}
mirror=${CONSTMEM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# The archive keyring of bookworm already holds trixie's keys.
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
# Only what nvcc needs to compile, link and embed the static runtime: the compiler drivers
# (nvidia-cuda-toolkit), the headers and static libraries (nvidia-cuda-dev, which has no smaller
# split) and libcudart.so, which CMake's FindCUDAToolkit insists on finding. Their Depends
# (cuBLAS, profilers, OpenCL, g++-13, libc6) are left out on purpose.
packages=(nvidia-cuda-toolkit nvidia-cuda-dev libcudart12)
stamp=${root}/.constmem-cuda12-complete

if [[ -f ${stamp} && -x ${root}/bin/nvcc ]]; then
  echo "${root}"
  exit 0
fi

work=${root}/.work
mkdir -p "${work}/apt/lists/partial" "${work}/apt/cache/archives/partial" "${work}/apt/etc/sources.list.d" \
  "${work}/apt/etc/preferences.d" "${work}/debs"
printf 'deb [arch=amd64 signed-by=%s] %s %s main contrib non-free\n' "${keyring}" "${mirror}" "${suite}" \
  >"${work}/apt/etc/sources.list"
# Private sources, lists, cache and an empty dpkg status: the system's apt state is neither read
# nor written, so the download resolves nothing against (and changes nothing in) bookworm.
apt_opts=(
  -o "Dir::Etc::SourceList=${work}/apt/etc/sources.list"
  -o "Dir::Etc::SourceParts=${work}/apt/etc/sources.list.d"
  -o "Dir::Etc::Preferences=${work}/apt/etc/preferences"
  -o "Dir::Etc::PreferencesParts=${work}/apt/etc/preferences.d"
  -o "Dir::State::Lists=${work}/apt/lists"
  -o "Dir::State::status=/dev/null"
  -o "Dir::Cache=${work}/apt/cache"
  -o "APT::Architecture=amd64"
  # The private directories belong to the caller, not to apt's _apt sandbox user.
  -o "APT::Sandbox::User=$(id -un)"
)
apt-get "${apt_opts[@]}" -qq update

version=$(apt-cache "${apt_opts[@]}" show --no-all-versions nvidia-cuda-toolkit | sed -n 's/^Version: //p')
if [[ ${version} != 12.* ]]; then
  echo "cuda12-toolkit: ${suite} has nvidia-cuda-toolkit ${version:-none}, not 12.x" >&2
  exit 1
fi

# apt-get download verifies each .deb against the signed lists; their Depends are not followed.
(cd "${work}/debs" && apt-get "${apt_opts[@]}" -q download "${packages[@]}")

# nvidia-cuda-dev unpacks to 2.5 GB, most of it the static math libraries: take only the headers
# and the runtime's libraries out of it.
pkg=${work}/pkg
rm -rf "${pkg}"
mkdir -p "${pkg}"
for deb in "${work}"/debs/*.deb; do
  case $(dpkg-deb --field "${deb}" Package) in
    nvidia-cuda-dev)
      dpkg-deb --fsys-tarfile "${deb}" | tar -x -C "${pkg}" --wildcards \
        './usr/include/*' \
        './usr/lib/x86_64-linux-gnu/libcudart*' \
        './usr/lib/x86_64-linux-gnu/libcudadevrt.a' \
        './usr/lib/x86_64-linux-gnu/libculibos.a' \
        './usr/lib/x86_64-linux-gnu/stubs/libcuda.so'
      ;;
    *) dpkg -x "${deb}" "${pkg}" ;;
  esac
done

# Debian spreads the toolkit over /usr/bin, /usr/lib/nvidia-cuda-toolkit, /usr/include and the
# multiarch library directory, and its nvcc.profile names those system paths; rebuild NVIDIA's
# own layout (bin, include, lib64, nvvm) so that nvcc, CMake and FindCUDAToolkit see one root.
rm -rf "${root:?}/bin" "${root:?}/include" "${root:?}/lib64" "${root:?}/nvvm"
mkdir -p "${root}/bin" "${root}/nvvm/bin" "${root}/nvvm/libdevice"
debian=${pkg}/usr/lib/nvidia-cuda-toolkit
# nvcc reads nvcc.profile from the directory of its own file, so the real driver (Debian's is in
# /usr/lib/nvidia-cuda-toolkit/bin) is moved here rather than linked.
mv "${debian}/bin/nvcc" "${debian}/bin/crt" "${root}/bin/"
mv "${debian}/bin/cicc" "${root}/nvvm/bin/"
mv "${debian}/libdevice/libdevice.10.bc" "${root}/nvvm/libdevice/"
for tool in cudafe++ ptxas fatbinary nvlink bin2c nvprune cuobjdump cu++filt nvdisasm; do
  mv "${pkg}/usr/bin/${tool}" "${root}/bin/"
done
mv "${pkg}/usr/include" "${root}/include"
mv "${pkg}/usr/lib/x86_64-linux-gnu" "${root}/lib64"
# Debian's profile would send nvcc to /usr/include and /usr/lib; this one is NVIDIA's, minus the
# targets/ indirection. Debian's bin/gcc and bin/g++ (its choice of host compiler) are not taken:
# nvcc uses the g++ on PATH or -ccbin, and CUDA 12.4's host_config.h accepts up to GCC 13.
cat >"${root}/bin/nvcc.profile" <<'EOF'
TOP              = $(_HERE_)/..
CICC_PATH        = $(TOP)/nvvm/bin
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
LD_LIBRARY_PATH += $(TOP)/lib64:
PATH            += $(CICC_PATH):$(_HERE_):
INCLUDES        +=  "-I$(TOP)/include" $(_SPACE_)
LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/lib64/stubs" "-L$(TOP)/lib64"
CUDAFE_FLAGS    +=
PTXAS_FLAGS     +=
EOF
"${root}/bin/nvcc" --version >/dev/null
rm -rf "${work}"
touch "${stamp}"
echo "${root}"
