#!/usr/bin/env bash
# Copies build/bin/maxkernel and the shared libraries it loads that are not the C library's own
# into bench/gpu/.bundle/ (git-ignored), for a GPU machine that can run the worker (Python + JAX)
# but cannot build MaxKernel (no Boost, spdlog or libcurl there, no network to fetch them).
# bench/gpu/run.sh uses the bundle when it is there. Build on an x86-64 Linux machine whose
# C library is no newer than the GPU machine's.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cli="$root/build/bin/maxkernel"
[[ -x "$cli" ]] || { echo "bundle.sh: build first (scripts/build.sh build)" >&2; exit 2; }
dest="$root/bench/gpu/.bundle"
rm -rf "$dest"
mkdir -p "$dest/lib"
cp "$cli" "$dest/maxkernel"
# Everything ldd resolves except the C runtime (libc, libm, libdl, libpthread, librt, the loader),
# which must come from the machine that runs it.
ldd "$cli" | awk '/=> \// {print $3}' | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*) ;;
    *) cp -L "$lib" "$dest/lib/" ;;
  esac
done
# Without debug information the bundle travels (a lent machine takes 64 MiB with the tree).
strip --strip-unneeded "$dest/maxkernel" "$dest"/lib/* 2>/dev/null || true
du -sh "$dest" >&2
echo "bundle: $dest (bench/gpu/run.sh picks it up)" >&2
