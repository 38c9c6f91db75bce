#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A CPython release that this Debian 12 machine's own releases do not carry (its Python is 3.11),
# for the clean-environment check: Debian unstable's python<VERSION> packages, with the glibc and
# OpenSSL they were built against, unpacked into a private prefix (nothing of the system's is
# changed), the interpreter pointed at that prefix's loader and libraries. Prints its path.
#
#   scripts/debian-python.sh 3.14   # then: CONSTMEM_ENV_PYTHON=<that path> scripts/test-clean-envs.sh
#
# Debian unstable carries 3.13 and newer. Needs apt-get and dpkg (as root), and patchelf (.venv's,
# from the test extras). The prefix is kept under $CONSTMEM_PYTHONS (default
# ~/.cache/constmem/pythons) for the next run.
set -euo pipefail
cd "$(dirname "$0")/.."
version=$1
prefix=${CONSTMEM_PYTHONS:-${XDG_CACHE_HOME:-$HOME/.cache}/constmem/pythons}/$version
python=$prefix/usr/bin/python$version
if "$python" -c 'import ssl, sqlite3, ctypes' 2>/dev/null; then
  echo "$python"
  exit 0
fi
patchelf=.venv/bin/patchelf
[ -x "$patchelf" ] || patchelf=patchelf
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The machine's own Debian mirror, its unstable suite, in a package list of this script's own.
mirror=$({ grep -rhoE 'https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/ \
  2>/dev/null || true; } | head -1 | tr -d ' ')
[ -n "$mirror" ] || { echo "debian-python: no Debian mirror in /etc/apt's sources" >&2; exit 1; }
echo "deb $mirror unstable main" >"$work/sources.list"
apt=(-o "Dir::Etc::sourcelist=$work/sources.list" -o Dir::Etc::sourceparts=-
  -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o APT::Sandbox::User=root)
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs"
apt-get "${apt[@]}" -qq update
# The interpreter (statically linked to libpython), its standard library, and the C library and
# OpenSSL its binary and extension modules were built against; the other libraries it links are
# Debian 12's own.
(cd "$work/debs" && apt-get "${apt[@]}" -qq download "python$version-minimal" \
  "libpython$version-minimal" "libpython$version-stdlib" libc6 libssl3t64)
rm -rf "$prefix"
mkdir -p "$prefix"
for deb in "$work"/debs/*.deb; do dpkg-deb -x "$deb" "$prefix"; done
# DT_RPATH, not RUNPATH: it serves the extension modules (and the wheels' libraries) the binary
# loads, so that all of them take the prefix's glibc and OpenSSL.
libraries=$prefix/usr/lib/x86_64-linux-gnu
"$patchelf" --set-interpreter "$libraries/ld-linux-x86-64.so.2" --force-rpath \
  --set-rpath "$libraries" "$python"
"$python" -c 'import ssl, sqlite3, ctypes' >&2
echo "$python"
