"""worker_throughput: the warm pool path, through the real product.

`maxkernel bench SUITE --no-cache` on a generated JAXBench-format suite: one folder per candidate,
each with the same `baseline.py` (the task: `workload` = the reference, `create_inputs(key)` = the
task's inputs function, so the inputs of a seed are the same as on the other paths) and the
candidate as `optimized.py`. The local host's timing lane has as many workers as the host's
compile lane on a CPU (capped at its cores; docs/hosts.md), and the bench evaluates that many
tasks at once. One uncounted warm-up folder per worker sorts first, so each worker's first
evaluate (its compiles of JAX's own helpers) is not counted, like the single warm worker's
warm-up evaluate.

Standard library only.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import time

WARMUP_PREFIX = "00_warmup_"
COUNTED_PREFIX = "cand_"


def baseline_source(task_source: str) -> str:
    # JAXBench's names for the task's functions; create_inputs takes the key, so the worker calls
    # it with jax.random.key(seed) exactly as it calls make_inputs on the in-file path.
    return task_source + "\n\n# JAXBench names (maxkernel bench reads baseline.py)\n" \
                         "workload = reference\ncreate_inputs = make_inputs\n"


def optimized_source(candidate_source: str) -> str:
    return candidate_source + "\n\nworkload = candidate  # JAXBench's entry name\n"


def write_suite(root: str, task_source: str, counted: list[str], warmups: list[str]) -> str:
    """The suite folder: warm-up folders first (they sort first), then one per candidate."""
    suite = os.path.join(root, "suite")
    folders = [(f"{WARMUP_PREFIX}{j}", src) for j, src in enumerate(warmups)]
    folders += [(f"{COUNTED_PREFIX}{i:02d}", src) for i, src in enumerate(counted)]
    for name, src in folders:
        d = os.path.join(suite, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "baseline.py"), "w", encoding="utf-8") as f:
            f.write(baseline_source(task_source))
        with open(os.path.join(d, "optimized.py"), "w", encoding="utf-8") as f:
            f.write(optimized_source(src))
    return suite


def _children_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_pool(maxkernel: str, python: str, env: dict, suite: str, seeds: list[int], timing: dict,
             timeout: float) -> dict:
    """Runs the bench once; the counted window is from the first counted task's start to the
    last counted task's end (warm-ups still running in it count against the pool)."""
    work = os.path.dirname(suite)
    hosts = os.path.join(work, "hosts.json")
    # Same scheduling priority as the other paths (the local host's default workerNice is 10).
    with open(hosts, "w", encoding="utf-8") as f:
        json.dump([{"name": "local", "kind": "local", "python": python, "workerNice": 0}], f)
    store = os.path.join(work, "store.sqlite")
    cmd = [maxkernel, "bench", suite, "--format", "json", "--no-cache", "--store", store,
           "--hosts", hosts, "--host", "local", "--seeds", ",".join(map(str, seeds)),
           "--timing", json.dumps(timing), "--timeout", str(timeout)]
    load0 = os.getloadavg()
    cpu0 = _children_cpu_s()
    t0 = time.perf_counter()
    cp = subprocess.run(cmd, capture_output=True, env=env, timeout=timeout * 4, check=False)
    process_wall = time.perf_counter() - t0
    cpu = _children_cpu_s() - cpu0
    load1 = os.getloadavg()
    if cp.returncode != 0:
        raise RuntimeError(f"maxkernel bench failed (rc={cp.returncode}):\n{cp.stderr.decode()[-3000:]}")
    out = json.loads(cp.stdout)
    tasks = out["tasks"]
    counted = [t for t in tasks if t["name"].startswith(COUNTED_PREFIX)]
    warm = [t for t in tasks if t["name"].startswith(WARMUP_PREFIX)]
    start = min(t["started_s"] for t in counted)
    end = max(t["started_s"] + t["host_seconds"] for t in counted)
    wall = end - start
    k = len(counted)
    per = [{"candidate": t["name"], "correct": t["correct"], "failure": t["failure"],
            "wall_s": t["host_seconds"], "started_s": t["started_s"],
            "cand_median_s": t["candidate_median_s"], "ref_median_s": t["reference_median_s"]}
           for t in counted]
    return {"k": k, "wall_s": wall, "evals_per_min": 60.0 * k / wall,
            "process_wall_s": process_wall, "evals_per_min_incl_startup": 60.0 * k / process_wall,
            "concurrency": out["summary"]["cost"]["concurrency"],
            "warmup_tasks": len(warm),
            "warmups_end_s": max((t["started_s"] + t["host_seconds"] for t in warm), default=0.0),
            "counted_start_s": start,
            # The bench process and all its workers, start-up and warm-ups included.
            "cpu_s": cpu, "cpu_s_per_eval": cpu / k, "loadavg_before": load0, "loadavg_after": load1,
            "command": cmd, "per_candidate": per,
            "stderr_tail": cp.stderr.decode("utf-8", "replace")[-2000:]}
