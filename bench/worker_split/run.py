"""The cost of the judge/candidate split per evaluation (issue 36): one warm worker, N evaluations
of the same correct in-file candidate with explicit seeds (so the frozen reference is reused, as
in a search or a bench run), timing off; prints the median and p90 of the wall time per evaluate.
With --fresh-seeds the requests name no seeds, so each draws new ones (as the optimize loop does).
--op lower / profile / autotune times those ops on the same candidate instead (autotune: two
configurations of BLOCK_ROWS; lower: with --generation, the TPU compiler's check too).

    python3 bench/worker_split/run.py [--worker tpu/worker/maxkernel_worker.py] [--n 12]

Run it with today's worker and with an older copy (`git archive <rev> tpu/worker | tar -x -C DIR`,
then `--worker DIR/tpu/worker/maxkernel_worker.py`) in one sitting to compare. Standard library only.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TASK = os.path.join(ROOT, "tests", "worker", "tasks", "infile", "scale_add.py")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", default=os.path.join(ROOT, "tpu", "worker", "maxkernel_worker.py"))
    ap.add_argument("--python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    ap.add_argument("--n", type=int, default=12)
    ap.add_argument("--op", default="evaluate", choices=["evaluate", "lower", "profile", "autotune"])
    ap.add_argument("--generation", default=None, help="lower: compile for this TPU generation too")
    ap.add_argument("--fresh-seeds", action="store_true",
                    help="no seeds in the request: the worker draws new ones each time (as a search does)")
    a = ap.parse_args()
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    p = subprocess.Popen([a.python, a.worker], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, env=env)
    with open(TASK, encoding="utf-8") as f:
        # A variant of the task's file, as a search's candidates are (the file's own text would be
        # the task itself, whose reference child is never kept).
        source = f.read() + "\n# a candidate variant\n"

    def evaluate(i):
        req = {"id": i, "op": a.op, "task": {"form": "infile", "path": TASK}, "source": source,
               "filename": TASK}
        if a.op in ("evaluate", "autotune") and not a.fresh_seeds:
            req["seeds"] = [1, 2, 3]
        if a.op == "evaluate":
            req["timing"] = False
        elif a.op == "autotune":
            req.update(space={"BLOCK_ROWS": [8, 16]}, timing={"min_runs": 1, "min_seconds": 0.0, "max_seconds": 0.2})
        elif a.op == "profile":
            req["runs"] = 1
        elif a.generation:
            req["generation"] = a.generation
        t0 = time.perf_counter()
        p.stdin.write((json.dumps(req) + "\n").encode())
        p.stdin.flush()
        while True:
            msg = json.loads(p.stdout.readline())
            if msg.get("id") == i and "ok" in msg:
                break
        wall = time.perf_counter() - t0
        phases.append((msg.get("judge") or {}).get("phases"))
        good = msg.get("correct") if a.op == "evaluate" else (
            msg.get("best") if a.op == "autotune" else msg.get("pallas_kernels") or msg.get("pallas_calls"))
        if not (msg.get("ok") and good):
            sys.exit(f"evaluation {i} failed: {json.dumps(msg)[:500]}")
        return wall

    phases = []
    first = evaluate(0)  # zygote start, first compiles, the reference (not counted)
    walls = sorted(evaluate(i) for i in range(1, a.n + 1))
    p.stdin.close()
    p.wait(timeout=60)
    p90 = walls[min(len(walls) - 1, round(0.9 * (len(walls) - 1)))]
    out = {"worker": a.worker, "op": a.op, "n": a.n, "fresh_seeds": a.fresh_seeds, "first_s": round(first, 3), "median_s": round(statistics.median(walls), 3),
           "p90_s": round(p90, 3), "min_s": round(walls[0], 3), "max_s": round(walls[-1], 3),
           "loadavg": os.getloadavg(), "last_phases": phases[-1]}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
