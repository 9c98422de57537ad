"""The TPU compiler over our reference suite: for every task, the generator's first kernel and the
task's reference are compiled for v5e by a real worker (`generate`, then `lower` with a
`generation`); prints per task the compile's status, cycles, speedup vs XLA's compiled program,
and the time and memory of each compile, then the summary (geomean, fast_p, median and max).

    .venv/bin/python bench/calibration/suite_compile.py [GENERATION [TASK ...]]

Compile-only: correctness is what `maxkernel bench --optimize` checks (bench/RESULTS.md)."""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "worker"))
from worker_harness import WorkerProcess

SUITE = os.path.join(ROOT, "bench", "suites", "reference")


def tasks():
    for fmt in ("jaxbench", "maxkernel"):
        for name in sorted(os.listdir(os.path.join(SUITE, fmt))):
            if os.path.isdir(os.path.join(SUITE, fmt, name)):
                yield fmt, name


def main(gen: str = "v5e", only=()) -> None:
    w = WorkerProcess()
    rows, walls, rss = [], [], []
    tmp = tempfile.mkdtemp(prefix="suite-compile-")
    try:
        for fmt, name in tasks():
            if only and name not in only:
                continue
            task = {"form": fmt, "dir": os.path.join(SUITE, fmt, name)}
            g = w.request("generate", task=task, timeout=600)
            if not g.get("ok"):
                rows.append((f"{fmt}/{name}", "no kernel", g["error"].get("kind"), None, None, None))
                continue
            path = os.path.join(tmp, f"{name}.py")
            with open(path, "w") as f:
                f.write(g["source"])
            r = w.request("lower", task=task, source=g["source"], filename=path, entry=g["entry"],
                          target="tpu", generation=gen, timeout=900)
            tc = r.get("tpu_compile") or (r.get("error") or {}).get("tpu_compile") or {}
            cand, ref = tc.get("candidate") or {}, tc.get("reference") or {}
            for c in (cand, ref):
                if c.get("wall_s") is not None:
                    walls.append(c["wall_s"])
                    rss.append(c.get("rss_peak_bytes") or 0)
            rows.append((f"{fmt}/{name}", cand.get("status", r.get("error", {}).get("kind")),
                         ref.get("status"), cand.get("cycles"), ref.get("cycles"), tc.get("speedup_vs_xla")))
            print(json.dumps({"task": f"{fmt}/{name}", "candidate": {k: cand.get(k) for k in (
                "status", "cycles", "wall_s", "rss_peak_bytes", "error_kind", "reason")},
                "reference": {k: ref.get(k) for k in ("status", "cycles", "wall_s", "rss_peak_bytes")},
                "speedup_vs_xla": tc.get("speedup_vs_xla")}), file=sys.stderr, flush=True)
    finally:
        w.close()
    print(f"| task | kernel compile | reference compile | kernel cycles | XLA cycles | speedup vs XLA ({gen}) |")
    print("|---|---|---|---|---|---|")
    for t, cs, rs, cc, rc, sp in rows:
        print(f"| {t} | {cs} | {rs} | {cc or '-'} | {rc or '-'} | {f'{sp:.2f}x' if sp else '-'} |")
    sps = [r[5] for r in rows if r[5]]
    if sps:
        geo = math.exp(sum(math.log(s) for s in sps) / len(sps))
        print(f"\ngeomean {geo:.2f}x over {len(sps)}; fast_0 {len(sps) / len(rows):.2f}, "
              f"fast_1 {sum(s > 1 for s in sps) / len(rows):.2f} of {len(rows)} tasks")
    if walls:
        print(f"compile wall: median {statistics.median(walls):.1f} s, max {max(walls):.1f} s; "
              f"child RSS: median {statistics.median(rss) / 2**20:.0f} MiB, max {max(rss) / 2**20:.0f} MiB "
              f"({len(walls)} compiles)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "v5e", set(sys.argv[2:]))
