#!/usr/bin/env bash
# `maxkernel bench --optimize` on the reference suite, on this machine's GPU, in one go: the
# generator writes each task's first kernel in the GPU form (Pallas on GPU, through Triton), the
# search tunes it, and every speedup is XLA's device time over the kernel's, both measured in the
# same run from the profiler trace. Results land in bench/out/gpu-<time>/ (bench.json, table.md,
# env.json, bench.log). See bench/gpu/README.md.
#
#   bench/gpu/run.sh                    # the whole suite (bench/suites/reference)
#   TASKS="rmsnorm softmax_rows" bench/gpu/run.sh   # some of its tasks (a shorter lease)
#   bench/gpu/run.sh --budget iterations=1,patience=1   # extra arguments go to maxkernel bench
#
# Environment: PYTHON (an interpreter whose JAX sees the GPU; default python3), MAXKERNEL_CLI (a
# maxkernel binary; default bench/gpu/.bundle/maxkernel from bench/gpu/bundle.sh, else
# build/bin/maxkernel, built when missing), SUITE (default bench/suites/reference), TASKS,
# DRY_RUN_ON_CPU=1 (run the steps on a CPU to check the script: interpret mode, no GPU time;
# pass --shrink 8 then).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
PYTHON="${PYTHON:-python3}"
SUITE="${SUITE:-bench/suites/reference}"
fail() { echo "bench/gpu/run.sh: $*" >&2; exit 2; }

# 1. A GPU that JAX sees, or a clear no.
device_json="$("$PYTHON" - <<'EOF' 2>&1
import json, os, sys
try:
    import jax
except Exception as e:  # noqa: BLE001
    print(f"no JAX: {type(e).__name__}: {e}"); sys.exit(3)
try:
    devs = jax.devices("gpu")
except Exception as e:  # noqa: BLE001
    if os.environ.get("DRY_RUN_ON_CPU") != "1":
        print(f"JAX {jax.__version__} sees no GPU ({type(e).__name__}: {str(e).splitlines()[0]})")
        sys.exit(3)
    devs = jax.devices()  # a dry run of the script's steps: nothing it prints is a GPU time
d = devs[0]
print(json.dumps({"device_kind": d.device_kind, "devices": len(devs), "jax": jax.__version__,
                  "compute_capability": getattr(d, "compute_capability", None),
                  "python": sys.version.split()[0], "dry_run": d.platform != "gpu"}))
EOF
)" || fail "needs a GPU: $device_json (PYTHON=$PYTHON)"

# 1b. The compile check of a GPU kernel runs in a compile worker, JAX on the CPU: the Pallas ->
# Triton lowering for CUDA must work there (it does on JAX 0.10 without a GPU; later JAX also
# compiles the Triton IR in Python then). A tiny kernel says so before the suite starts.
JAX_PLATFORMS=cpu "$PYTHON" - <<'EOF' >&2 || fail "a Pallas GPU kernel does not lower for CUDA in a CPU-only JAX process here: every compile check would fail"
import jax, jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu
def k(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2.0
def f(x):
    return pl.pallas_call(k, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(2,),
                          in_specs=[pl.BlockSpec((16, 128), lambda i: (i, 0))],
                          out_specs=pl.BlockSpec((16, 128), lambda i: (i, 0)),
                          compiler_params=plgpu.CompilerParams(num_warps=4))(x)
jax.jit(f).trace(jax.ShapeDtypeStruct((32, 128), jnp.float32)).lower(lowering_platforms=("cuda",))
print("preflight: a Pallas GPU kernel lowers for CUDA in a CPU-only JAX process")
EOF

# 2. The CLI: a given or bundled binary, else the build (built when missing).
cli="${MAXKERNEL_CLI:-}"
if [[ -z "$cli" && -x bench/gpu/.bundle/maxkernel ]]; then
  cli=bench/gpu/.bundle/maxkernel
  export LD_LIBRARY_PATH="$root/bench/gpu/.bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
if [[ -z "$cli" ]]; then
  cli=build/bin/maxkernel
  if ! "$cli" --help >/dev/null 2>&1; then
    echo "building maxkernel (scripts/build.sh build)..." >&2
    scripts/build.sh build >&2 || fail "the build failed; build elsewhere and carry bench/gpu/bundle.sh's bundle"
  fi
fi
"$cli" --help >/dev/null 2>&1 || fail "$cli does not run here (missing libraries? see bench/gpu/bundle.sh)"

# 3. The suite (or the tasks named in TASKS), run once.
out="bench/out/gpu-$(date -u +%Y%m%d-%H%M%S)"
mkdir -p "$out"
echo "$device_json" >"$out/env.json"
suite="$SUITE"
if [[ -n "${TASKS:-}" ]]; then
  suite="$out/suite"
  for t in $TASKS; do
    found=$(find "$SUITE" -mindepth 1 -maxdepth 2 -type d -name "$t" | head -1)
    [[ -n "$found" ]] || fail "no task $t under $SUITE"
    group=$(basename "$(dirname "$found")")
    mkdir -p "$suite/$group"
    ln -s "$root/$found" "$suite/$group/$t"
  done
fi
# One process holds the GPU (the timing worker); it takes memory as it needs it.
export XLA_PYTHON_CLIENT_PREALLOCATE=false
export MAXKERNEL_WORKER_DIR="$root/tpu/worker"
echo "maxkernel bench $suite --optimize on $(echo "$device_json" | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["device_kind"])') -> $out" >&2
set +e
"$cli" bench "$suite" --optimize --host local --python "$(command -v "$PYTHON")" \
  --store "$out/store.db" --format json "$@" >"$out/bench.json" 2> >(tee "$out/bench.log" >&2)
rc=$?
set -e
[[ $rc -eq 0 ]] || fail "maxkernel bench exited $rc (log: $out/bench.log)"
"$PYTHON" bench/gpu/table.py "$out/bench.json" "$out/env.json" | tee "$out/table.md"
echo "results: $out" >&2
