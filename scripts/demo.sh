#!/usr/bin/env bash
# The main job on a fresh machine, on the embedded default (local host, SQLite store, no LLM):
# set up, build, check the example kernels statically, then optimise one of them with the Auto
# loop (autotuner moves + rule-based rewrites), print the result table and write the HTML report.
# On a CPU host correctness is real (Pallas interpret mode) and speedups are the TPU time model's
# predictions, labelled as such.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/setup.sh --main
# Only the programs (no test binaries): a separate build dir, so the tests' build/ keeps its options.
scripts/build.sh build-main -DMAXKERNEL_TESTS=OFF
bin="$root/build-main/bin"
out="$root/build-main/demo"
mkdir -p "$out"
echo
echo "$ maxkernel check --target v5e examples/"
status=0
"$bin/maxkernel" check --target v5e examples/ || status=$?
# Exit 1 means "errors were found" (examples/block_shape_mistakes.py has some on purpose).
[[ $status -le 1 ]]
echo
echo "$ maxkernel optimize examples/tiled_matmul_task.py --mode auto --budget iterations=3"
"$bin/maxkernel" optimize examples/tiled_matmul_task.py --mode auto --budget iterations=3 \
  --branches 2 --python "$root/.venv/bin/python" --store "$out/store.sqlite" \
  --report "$out/report.html"
echo
echo "$ maxkernel optimize examples/linear_gelu_reference.py --budget iterations=1   # no kernel yet"
# A plain JAX function: the run starts from XLA, writes the first Pallas kernel from templates and
# tunes it; the best kernel goes beside a copy of the example (the repository stays as it is).
cp examples/linear_gelu_reference.py "$out/linear_gelu_reference.py"
"$bin/maxkernel" optimize "$out/linear_gelu_reference.py" --budget iterations=1 --branches 2 \
  --python "$root/.venv/bin/python" --store "$out/store.sqlite" --report "$out/report_reference.html"
