#!/usr/bin/env bash
# The main job on a fresh machine, on the embedded default (local host, no LLM): set up, build,
# and statically check the example kernels against the default TPU target (v5e).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/setup.sh
scripts/build.sh build
echo
echo "$ maxkernel check --target v5e examples/"
status=0
build/bin/maxkernel check --target v5e examples/ || status=$?
# Exit 1 means "errors were found" (examples/block_shape_mistakes.py has some on purpose).
[[ $status -le 1 ]]
