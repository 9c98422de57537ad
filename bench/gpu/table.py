"""The Markdown table of a `maxkernel bench --optimize --format json` run on a GPU, for
bench/RESULTS.md: per task compiled, correct, speedup vs XLA (and whether it was measured),
then the geometric mean and fast_p, naming the GPU.

    python3 bench/gpu/table.py bench/out/gpu-.../bench.json bench/out/gpu-.../env.json
"""

from __future__ import annotations

import json
import sys


def _yes(v) -> str:
    return "yes" if v else "no"


def _speedup(task) -> str:
    s = task.get("speedup_vs_xla")
    if s is None:
        return "n/a"
    kind = task.get("time_kind") or "?"
    return f"{s:.2f}x" + ("" if kind == "device" else f" ({kind})")


def _num(v, fmt="{:.3f}") -> str:
    return "n/a" if v is None else fmt.format(v)


def render(bench: dict, env: dict) -> str:
    gpu = env.get("device_kind", "an unnamed GPU")
    cc = env.get("compute_capability")
    lines = []
    if env.get("dry_run"):
        lines += [("**Dry run on a CPU (DRY_RUN_ON_CPU=1): every kernel ran in the interpreter; "
                   "no number below is a GPU time.**"), ""]
    lines += [f"GPU: {gpu}" + (f" (compute capability {cc})" if cc else "") +
             f", JAX {env.get('jax', '?')}; suite `{bench.get('suite')}`, mode "
             f"{bench.get('mode')}, LLM {bench.get('llm') or 'none'}", "",
             "| task | class | compiled | correct | speedup vs XLA | evaluations | note |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for t in bench.get("tasks", []):
        note = (t.get("failure") or "").replace("|", "/").replace("\n", " ")[:90]
        lines.append(f"| {t['name']} | {t.get('class') or 'none'} | {_yes(t.get('compiled'))} | "
                     f"{_yes(t.get('correct'))} | {_speedup(t)} | "
                     f"{(t.get('cost') or {}).get('evaluations', '')} | {note} |")
    s = bench.get("summary", {})
    fast = s.get("fast_p") or {}
    lines += ["",
              f"compiled {s.get('compiled')}/{s.get('tasks')}, correct {s.get('correct')}/"
              f"{s.get('tasks')}; geomean speedup vs XLA (measured): "
              f"{_num(s.get('geomean_speedup_measured'))}; "
              + "fast_p: " + ", ".join(f"{k} {_num(v)}" for k, v in fast.items())
              + f"; wall {_num(s.get('wall_seconds'), '{:.0f}')} s"]
    if s.get("geomean_speedup_predicted") is not None:
        lines.append("(some speedups are the TPU model's predictions, not measurements: "
                     f"geomean {_num(s.get('geomean_speedup_predicted'))})")
    return "\n".join(lines) + "\n"


def main(argv) -> int:
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        bench = json.load(f)
    with open(argv[2], encoding="utf-8") as f:
        env = json.load(f)
    sys.stdout.write(render(bench, env))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
