#!/usr/bin/env bash
# Configures and builds MaxKernel. Usage: scripts/build.sh [BUILD_DIR] [extra cmake args...]
#   scripts/build.sh                      -> build/ (RelWithDebInfo)
#   scripts/build.sh build-asan -DMAXKERNEL_SANITIZE=address,undefined
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${1:-build}"
shift || true
cmake -S "$root" -B "$root/$dir" -G Ninja "$@" >/dev/null
ninja -C "$root/$dir" -j "${MAXKERNEL_JOBS:-2}"
