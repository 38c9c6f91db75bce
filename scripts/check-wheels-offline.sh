#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The clean-environment check (scripts/clean_env_check.py) on a machine without network whose
# Python already has the frameworks (a GPU host): for each of torch and jax that it has, a fresh
# virtual environment that sees the system's packages but the other frameworks, constmem installed
# there from WHEELS alone (scripts/build-wheels.sh's output), then the check with no compiler on
# the path. It proves the wheels on that Python's version; scripts/test-clean-envs.sh does the same
# from PyPI where there is network.
#
#   scripts/check-wheels-offline.sh WHEELS [PYTHON] [VARIANT]   # PYTHON: python3, VARIANT: cu13
set -euo pipefail
cd "$(dirname "$0")/.."
wheels=$(cd "$1" && pwd)
python=${2:-python3}
variant=${3:-cu13}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
system_site=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
others_of() { # the frameworks other than $1, as name prefixes in site-packages
  case $1 in
    torch) echo "jax jaxlib jax_ tensorflow tf_keras" ;;
    jax) echo "torch torchvision torchaudio tensorflow tf_keras" ;;
  esac
}
for framework in torch jax; do
  "$python" -c "import $framework" 2>/dev/null || {
    echo "check-wheels-offline: $framework not installed, skipped" >&2
    continue
  }
  start=$SECONDS
  # The system's packages less the other frameworks, linked one by one into a directory of its own.
  visible=$work/site-$framework
  mkdir -p "$visible"
  for entry in "$system_site"/*; do
    name=$(basename "$entry")
    skip=0
    for other in $(others_of "$framework"); do
      case $name in "$other" | "$other"-* | "$other".* | "$other"_*) skip=1 ;; esac
    done
    case $name in constmem | constmem-* | constmem_*) skip=1 ;; esac
    [ $skip = 1 ] || ln -s "$entry" "$visible/$name"
  done
  env=$work/env-$framework
  if ! "$python" -m venv "$env" 2>/dev/null; then
    rm -rf "$env"
    "$python" -m venv --without-pip "$env"
  fi
  env_site=$("$env/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "import site; site.addsitedir('$visible')" >"$env_site/system-less-others.pth"
  # The environment's own pip, else the system's pointed at it, else the system's into its site.
  install=("$env/bin/python" -m pip install)
  if ! "$env/bin/python" -m pip --version >/dev/null 2>&1; then
    if "$python" -m pip --python "$env/bin/python" --version >/dev/null 2>&1; then
      install=("$python" -m pip --python "$env/bin/python" install)
    else
      install=("$python" -m pip install --target "$env_site")
    fi
  fi
  "${install[@]}" -q --no-index --no-deps "$wheels"/constmem-[0-9]*.whl \
    "$wheels"/constmem_"$framework"_"$variant"-*.whl
  (cd "$work" && PATH="$env/bin" JAX_PLATFORMS=cpu "$env/bin/python" \
    "$OLDPWD/scripts/clean_env_check.py" "$framework" "$variant")
  echo "check-wheels-offline: $("$env/bin/python" --version), $framework in $((SECONDS - start)) s" >&2
done
