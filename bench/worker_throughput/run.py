#!/usr/bin/env python3
"""worker_throughput: candidate evaluations per minute, warm worker (and the
warm worker pool of `maxkernel bench`) vs a fresh Python process per candidate.

    python3 bench/worker_throughput/run.py            # from the repository root

Standard library only (the worker and fresh_eval.py run under the venv's
python, `.venv/bin/python` by default).  See README.md next to this file.

Method, in short:

* K candidate kernels (default 12) for one in-file task (row RMS-norm of a
  (256, 512) f32 array times a (1, 512) weight), all equivalent, each source
  distinct: BLOCK_ROWS cycles through 8/16/32/64, EPS is spelled differently
  (1e-6, 1.0e-6, 0.000001, ...: the same float), the mean of squares is
  written one of three equivalent ways, and the kernel function has its own
  name and tag.  One more candidate (not counted) warms the worker.
* warm path: one worker process (tpu/worker/maxkernel_worker.py), `hello`,
  one `evaluate` of the warm-up candidate (not counted), then `evaluate` of
  each of the K candidates in turn (request -> response, then the next),
  seeds fixed, timing config fixed.  Wall time from the first request to the
  last response.
* fresh path: for each candidate, `python fresh_eval.py ...` (a new process
  that imports JAX, executes the task and candidate, checks and times with
  the same seeds, run counts and timing config) and waits for it to exit.
  Wall time from the first spawn to the last exit.
* warm pool path (pool_path.py): `maxkernel bench` on a generated
  JAXBench-format suite (one folder per candidate, same baseline), with the
  same seeds and timing; on a CPU host it evaluates as many tasks at once as
  the host has timing workers.  One uncounted warm-up task per worker.
* fresh at equal concurrency: the fresh path, as many processes at once as
  the pool ran tasks at once.
* Each path runs `--reps` times (default 2), interleaved, so slow drift of
  the machine hits all of them.

Writes bench/out/worker_throughput.json and prints a markdown table.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime as dt
import json
import os
import platform
import queue
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import pool_path

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WORKER = os.path.join(ROOT, "tpu", "worker", "maxkernel_worker.py")
FRESH = os.path.join(HERE, "fresh_eval.py")
DEFAULT_PY = os.path.join(ROOT, ".venv", "bin", "python")
DEFAULT_OUT = os.path.join(ROOT, "bench", "out", "worker_throughput.json")
DEFAULT_MAXKERNEL = os.path.join(ROOT, "build", "bin", "maxkernel")

SEEDS = [11, 22, 33]
# max_seconds 10.0: the 8-row candidates take ~0.15 s per run in TPU interpret mode on a quiet
# machine and 0.3-0.5 s when it is busy (or when two evaluations share two cores); with a lower cap
# the loop stopped early and the run count depended on the load (0.5 s: 4 runs quiet; 2.0 s: 3-4
# runs busy). With min_seconds 0 and max_runs 5 every evaluation does exactly 1 + 5 runs.
TIMING = {"warmup": 1, "min_runs": 5, "min_seconds": 0, "max_runs": 5, "max_seconds": 10.0}
GOAL_RATIO = 3.0

# ---------------------------------------------------------------------------
# The task and the candidates.

TASK_SOURCE = '''\
"""worker_throughput task: row RMS-norm, out = x * rsqrt(mean(x^2, axis=-1) + EPS) * w."""
import jax
import jax.numpy as jnp

ROWS, COLS = 256, 512
EPS = 1e-6
TOLERANCES = {"rtol": 1e-5, "atol": 1e-5}


def reference(x, w):
    ms = jnp.mean(x * x, axis=-1, keepdims=True)
    return x * jax.lax.rsqrt(ms + EPS) * w


def make_inputs(key):
    kx, kw = jax.random.split(key)
    x = jax.random.normal(kx, (ROWS, COLS), jnp.float32)
    w = jax.random.uniform(kw, (1, COLS), jnp.float32, minval=0.5, maxval=1.5)
    return x, w
'''

CANDIDATE_TEMPLATE = '''\
"""worker_throughput candidate {tag}: row RMS-norm, {block_rows}-row blocks."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

CANDIDATE_TAG = "{tag}"
ROWS, COLS = 256, 512
BLOCK_ROWS = {block_rows}
EPS = {eps}


def _rmsnorm_kernel_{idx:02d}(x_ref, w_ref, o_ref):
    x = x_ref[...]
    ms = {mean_sq}
    o_ref[...] = x * jax.lax.rsqrt(ms + EPS) * w_ref[...]


def candidate(x, w):
    rows, cols = x.shape
    return pl.pallas_call(
        _rmsnorm_kernel_{idx:02d},
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(rows // BLOCK_ROWS,),
        in_specs=[pl.BlockSpec((BLOCK_ROWS, cols), lambda i: (i, 0)),
                  pl.BlockSpec((1, cols), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((BLOCK_ROWS, cols), lambda i: (i, 0)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(x, w)
'''

BLOCK_ROWS = [8, 16, 32, 64]
EPS_SPELLINGS = ["1e-6", "1.0e-6", "0.000001", "1e-06", "10e-7", "0.1e-5", "1E-6"]
MEAN_SQ = [
    "jnp.mean(x * x, axis=-1, keepdims=True)",
    "jnp.sum(x * x, axis=-1, keepdims=True) * (1.0 / COLS)",
    "jnp.mean(jnp.square(x), axis=1, keepdims=True)",
]


def candidate_source(idx: int) -> str:
    return CANDIDATE_TEMPLATE.format(
        idx=idx, tag=f"cand-{idx:02d}", block_rows=BLOCK_ROWS[idx % len(BLOCK_ROWS)],
        eps=EPS_SPELLINGS[idx % len(EPS_SPELLINGS)], mean_sq=MEAN_SQ[idx % len(MEAN_SQ)])


def with_rows(src: str, rows: int) -> str:
    return src.replace("ROWS, COLS = 256, 512", f"ROWS, COLS = {rows}, 512")


def write_inputs(tmp: str, k: int, rows: int = 256) -> tuple[str, list[str], str]:
    task = os.path.join(tmp, "task.py")
    with open(task, "w", encoding="utf-8") as f:
        f.write(with_rows(TASK_SOURCE, rows))
    paths = []
    for i in range(k + 1):  # index k is the warm-up candidate
        p = os.path.join(tmp, f"cand_{i:02d}.py")
        with open(p, "w", encoding="utf-8") as f:
            f.write(with_rows(candidate_source(i), rows))
        paths.append(p)
    return task, paths[:k], paths[k]


# ---------------------------------------------------------------------------
# A minimal worker client (JSON lines over pipes; every wait has a timeout).

class Worker:
    def __init__(self, python: str, env: dict):
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen([python, WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, env=env)
        self.q: queue.Queue = queue.Queue()
        self.next_id = 1
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in iter(self.proc.stdout.readline, b""):
            try:
                self.q.put(json.loads(line))
            except json.JSONDecodeError:
                self.q.put({"__bad_line__": line.decode("utf-8", "replace")})
        self.q.put(None)

    def request(self, op: str, timeout: float, **fields) -> dict:
        rid = self.next_id
        self.next_id += 1
        self.proc.stdin.write((json.dumps({"id": rid, "op": op, **fields}) + "\n").encode())
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"worker: no answer to {op} within {timeout}s\n{self.stderr_tail()}")
            try:
                m = self.q.get(timeout=left)
            except queue.Empty:
                continue
            if m is None:
                raise RuntimeError(f"worker exited (rc={self.proc.poll()})\n{self.stderr_tail()}")
            if m.get("id") == rid and "ok" in m:
                return m
            # progress events and anything else: ignored

    def stderr_tail(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode("utf-8", "replace")[-3000:]

    def close(self):
        try:
            if self.proc.poll() is None:
                self.request("shutdown", timeout=30)
                self.proc.wait(timeout=30)
        except Exception:  # noqa: BLE001
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.stderr.close()


def proc_cpu_s(pid: int) -> float:
    """user + system CPU seconds of a live process (all its threads)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def eval_summary(r: dict) -> dict:
    """The parts of an evaluate response / fresh_eval result we keep."""
    t = r.get("timing") or {}
    c, ref = t.get("candidate") or {}, t.get("reference") or {}
    return {"correct": r.get("correct"), "failure": r.get("failure"),
            "cand_timing_runs": c.get("runs"), "ref_timing_runs": ref.get("runs"),
            "cand_median_s": c.get("median_s"), "ref_median_s": ref.get("median_s")}


def run_warm(python, env, task, cands, warm_cand, timeout, keep_caches=False) -> dict:
    env = dict(env)
    if keep_caches:
        # The worker's documented switch: keep JAX's compilation caches between ops
        # (default: jax.clear_caches() after every op).
        env["MAXKERNEL_WORKER_CLEAR_CACHES"] = "0"
    t_spawn = time.perf_counter()
    w = Worker(python, env)
    try:
        hello = w.request("hello", timeout=timeout, protocol_version=1)
        if not hello.get("ok"):
            raise RuntimeError(f"hello failed: {hello}")
        t_hello = time.perf_counter()

        def evaluate(path):
            with open(path, encoding="utf-8") as f:
                src = f.read()
            t0 = time.perf_counter()
            r = w.request("evaluate", timeout=timeout, task={"form": "infile", "path": task},
                          filename=path, source=src, seeds=SEEDS, timing=TIMING)
            wall = time.perf_counter() - t0
            if not r.get("ok"):
                raise RuntimeError(f"evaluate {os.path.basename(path)} failed: "
                                   f"{json.dumps(r.get('error'))[:2000]}")
            return r, wall

        r, warm_wall = evaluate(warm_cand)
        per = []
        load0 = os.getloadavg()
        cpu0 = proc_cpu_s(w.proc.pid)
        t0 = time.perf_counter()
        for p in cands:
            r, wall = evaluate(p)
            per.append(dict(eval_summary(r), candidate=os.path.basename(p), wall_s=wall,
                            worker_elapsed_s=r.get("elapsed_s"),
                            compile_s=(r.get("compile_s") or {}).get("candidate"),
                            reference_reused=r.get("reference_reused")))
        total = time.perf_counter() - t0
        cpu = proc_cpu_s(w.proc.pid) - cpu0
        load1 = os.getloadavg()
    finally:
        w.close()
    return {"startup_to_hello_s": t_hello - t_spawn, "warmup_eval_s": warm_wall,
            "jax": hello.get("jax"), "worker_pid": hello.get("pid"),
            "k": len(cands), "wall_s": total, "evals_per_min": 60.0 * len(cands) / total,
            "cpu_s": cpu, "cpu_s_per_eval": cpu / len(cands), "loadavg_before": load0, "loadavg_after": load1,
            "evals_per_min_incl_startup": 60.0 * len(cands) / (total + (t_hello - t_spawn) + warm_wall),
            "per_candidate": per}


def run_fresh(python, env, task, cands, timeout, concurrency=1) -> dict:
    """A fresh process per candidate, `concurrency` at a time (1: the seed's way)."""
    load0 = os.getloadavg()
    cpu0 = children_cpu_s()
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=concurrency) as pool:
        per = list(pool.map(lambda p: fresh_one(python, env, task, p, timeout), cands))
    total = time.perf_counter() - t0
    cpu = children_cpu_s() - cpu0
    return {"k": len(cands), "wall_s": total, "evals_per_min": 60.0 * len(cands) / total,
            "concurrency": concurrency,
            "cpu_s": cpu, "cpu_s_per_eval": cpu / len(cands), "loadavg_before": load0,
            "loadavg_after": os.getloadavg(), "per_candidate": per}


def fresh_one(python, env, task, p, timeout) -> dict:
    """One `python fresh_eval.py` process for one candidate."""
    t1 = time.perf_counter()
    cp = subprocess.run([python, FRESH, "--task", task, "--candidate", p,
                         "--seeds", ",".join(map(str, SEEDS)), "--timing", json.dumps(TIMING)],
                        capture_output=True, env=env, timeout=timeout, check=False)
    wall = time.perf_counter() - t1
    lines = [ln for ln in cp.stdout.decode("utf-8", "replace").splitlines() if ln.startswith("{")]
    if cp.returncode != 0 or not lines:
        raise RuntimeError(f"fresh_eval {os.path.basename(p)} failed (rc={cp.returncode}):\n"
                           f"{cp.stdout.decode()[-2000:]}\n{cp.stderr.decode()[-2000:]}")
    r = json.loads(lines[-1])
    return dict(eval_summary(r), candidate=os.path.basename(p), wall_s=wall,
                phases=r.get("phases"), kernel_runs=r.get("kernel_runs"))


# ---------------------------------------------------------------------------

def machine() -> dict:
    cpu = None
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "cpu_model": cpu, "platform": platform.platform(),
            "host_python": platform.python_version()}


def read_text(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def pool_workers_expected() -> int:
    """The local CPU host's automatic timing lane: its 2 compile workers, capped at the cores."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(2, cores))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="warm worker / warm pool vs fresh processes: evaluations per minute")
    ap.add_argument("--k", type=int, default=12, help="candidates per path per repetition (default 12)")
    ap.add_argument("--reps", type=int, default=2, help="repetitions of each path (default 2)")
    ap.add_argument("--python", default=DEFAULT_PY, help="python with JAX (default .venv/bin/python)")
    ap.add_argument("--maxkernel", default=DEFAULT_MAXKERNEL,
                    help="the maxkernel binary for the warm pool path (default build/bin/maxkernel)")
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--timeout", type=float, default=300.0, help="per request / per process (s)")
    ap.add_argument("--rows", type=int, default=256,
                    help="rows of the (ROWS, 512) input (default 256; a multiple of 64) - a sensitivity knob: "
                         "fewer rows = fewer grid steps = less interpreter time per kernel run")
    ap.add_argument("--keep-tmp", action="store_true", help="keep the generated task and candidates")
    ap.add_argument("--no-pool", action="store_true",
                    help="skip the warm pool (maxkernel bench) and the equal-concurrency fresh path")
    ap.add_argument("--no-keep-caches-variant", action="store_true",
                    help="skip the extra warm run with MAXKERNEL_WORKER_CLEAR_CACHES=0")
    args = ap.parse_args(argv)
    if not args.no_pool and not os.access(args.maxkernel, os.X_OK):
        ap.error(f"{args.maxkernel} is not an executable (build it, pass --maxkernel, or --no-pool)")

    env = dict(os.environ)
    env["JAX_PLATFORMS"] = "cpu"
    for k in ("JAX_COMPILATION_CACHE_DIR", "JAX_ENABLE_COMPILATION_CACHE", "MAXKERNEL_WORKER_CLEAR_CACHES",
              "MAXKERNEL_WORKER_GOLDEN_CACHE"):
        env.pop(k, None)  # no persistent compile cache; the worker's defaults

    tmp = tempfile.mkdtemp(prefix="mk-worker-throughput-")
    workers = pool_workers_expected()
    try:
        if args.rows % 64:
            ap.error("--rows must be a multiple of 64")
        task, cands, warm_cand = write_inputs(tmp, args.k, args.rows)
        suite = None
        if not args.no_pool:
            warmups = [with_rows(candidate_source(args.k + 1 + j), args.rows) for j in range(workers)]
            suite = pool_path.write_suite(tmp, read_text(task), [read_text(p) for p in cands], warmups)
        runs = []
        for rep in range(1, args.reps + 1):
            def say(msg, rep=rep):
                print(f"rep {rep}: {msg}", file=sys.stderr, flush=True)
            say("warm path ...")
            warm = run_warm(args.python, env, task, cands, warm_cand, args.timeout)
            say(f"warm {warm['wall_s']:.1f}s; fresh path (sequential) ...")
            fresh = run_fresh(args.python, env, task, cands, args.timeout)
            say(f"fresh {fresh['wall_s']:.1f}s")
            run = {"rep": rep, "warm": warm, "fresh": fresh,
                   "ratio": warm["evals_per_min"] / fresh["evals_per_min"],
                   "ratio_incl_startup": warm["evals_per_min_incl_startup"] / fresh["evals_per_min"]}
            if suite:
                say(f"warm pool (maxkernel bench, {workers} timing workers) ...")
                pool = pool_path.run_pool(args.maxkernel, args.python, env, suite, SEEDS, TIMING, args.timeout)
                say(f"pool {pool['wall_s']:.1f}s (process {pool['process_wall_s']:.1f}s); "
                    f"fresh path, {pool['concurrency']} at a time ...")
                fresh_c = run_fresh(args.python, env, task, cands, args.timeout, concurrency=pool["concurrency"])
                say(f"fresh x{pool['concurrency']} {fresh_c['wall_s']:.1f}s")
                run.update(pool=pool, fresh_concurrent=fresh_c,
                           ratio_pool=pool["evals_per_min"] / fresh["evals_per_min"],
                           ratio_pool_incl_startup=pool["evals_per_min_incl_startup"] / fresh["evals_per_min"],
                           ratio_pool_equal_concurrency=pool["evals_per_min"] / fresh_c["evals_per_min"],
                           ratio_fresh_concurrent=fresh_c["evals_per_min"] / fresh["evals_per_min"])
            if not args.no_keep_caches_variant:
                say("warm path, worker keeping JAX caches ...")
                wk = run_warm(args.python, env, task, cands, warm_cand, args.timeout, keep_caches=True)
                say(f"warm (keep caches) {wk['wall_s']:.1f}s")
                run.update(warm_keep_caches=wk, ratio_keep_caches=wk["evals_per_min"] / fresh["evals_per_min"])
            runs.append(run)
    finally:
        if args.keep_tmp:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    problems = sanity_problems(runs)
    summary = summarize(runs, problems)
    out = {"benchmark": "worker_throughput", "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
           "machine": machine(), "python": args.python, "maxkernel": None if args.no_pool else args.maxkernel,
           "k": args.k, "shape": [args.rows, 512], "reps": args.reps, "seeds": SEEDS,
           "timing": TIMING, "block_rows": BLOCK_ROWS, "summary": summary, "runs": runs,
           "task_source": with_rows(TASK_SOURCE, args.rows),
           "candidate_0_source": with_rows(candidate_source(0), args.rows)}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)
    print_report(args, runs, summary)
    print(f"\nwrote {os.path.relpath(args.out, ROOT)}")
    return 1 if problems else 0


PATHS = ("warm", "fresh", "pool", "fresh_concurrent", "warm_keep_caches")


def sanity_problems(runs) -> list[str]:
    """Every candidate correct on every path, and timed with the same run counts where the path
    reports them (maxkernel bench's JSON has no run counts; it passes the same --timing)."""
    problems = []
    for r in runs:
        for path in PATHS:
            for c in (r[path]["per_candidate"] if path in r else []):
                if not c["correct"]:
                    problems.append(f"rep {r['rep']} {path} {c['candidate']}: not correct: {c['failure']}")
                if path == "pool":
                    if not c.get("cand_median_s"):
                        problems.append(f"rep {r['rep']} pool {c['candidate']}: no candidate timing")
                    continue
                if (c["cand_timing_runs"], c["ref_timing_runs"]) != (TIMING["min_runs"], TIMING["min_runs"]):
                    problems.append(f"rep {r['rep']} {path} {c['candidate']}: timing runs "
                                    f"{c['cand_timing_runs']}/{c['ref_timing_runs']} != {TIMING['min_runs']}")
    return problems


def summarize(runs, problems) -> dict:
    ratios = [r["ratio"] for r in runs]
    summary = {
        "warm_evals_per_min": [r["warm"]["evals_per_min"] for r in runs],
        "fresh_evals_per_min": [r["fresh"]["evals_per_min"] for r in runs],
        "ratio": ratios, "ratio_mean": statistics.fmean(ratios), "ratio_min": min(ratios),
        "ratio_incl_startup": [r["ratio_incl_startup"] for r in runs],
        "goal_ratio": GOAL_RATIO, "problems": problems,
    }
    if all("pool" in r for r in runs):
        pool_ratios = [r["ratio_pool"] for r in runs]
        summary.update(
            pool_evals_per_min=[r["pool"]["evals_per_min"] for r in runs],
            fresh_concurrent_evals_per_min=[r["fresh_concurrent"]["evals_per_min"] for r in runs],
            ratio_pool=pool_ratios, ratio_pool_mean=statistics.fmean(pool_ratios),
            ratio_pool_incl_startup=[r["ratio_pool_incl_startup"] for r in runs],
            ratio_pool_equal_concurrency=[r["ratio_pool_equal_concurrency"] for r in runs],
            ratio_fresh_concurrent=[r["ratio_fresh_concurrent"] for r in runs],
            pool_concurrency=[r["pool"]["concurrency"] for r in runs])
        # The goal: the warm POOL vs a fresh process per candidate, one at a time (the seed's way).
        summary["goal_met"] = min(pool_ratios) >= GOAL_RATIO
    else:
        summary["goal_met"] = min(ratios) >= GOAL_RATIO
    if all("warm_keep_caches" in r for r in runs):
        summary["warm_keep_caches_evals_per_min"] = [r["warm_keep_caches"]["evals_per_min"] for r in runs]
        summary["ratio_keep_caches"] = [r["ratio_keep_caches"] for r in runs]
    paths = [p for p in PATHS if f"{p}_evals_per_min" in summary]
    summary["paths"] = paths
    for path in paths:
        eps = summary[f"{path}_evals_per_min"]
        summary[f"{path}_spread_pct"] = 100.0 * (max(eps) - min(eps)) / statistics.fmean(eps)
        summary[f"{path}_cpu_s_per_eval"] = [r[path]["cpu_s_per_eval"] for r in runs]
        cands = [c for r in runs for c in r[path]["per_candidate"]]
        summary[f"{path}_eval_wall_median_s"] = statistics.median(c["wall_s"] for c in cands)
        # Same kernel work in every path? The interpreter's per-run time of the candidate.
        summary[f"{path}_cand_run_median_s"] = statistics.median(c["cand_median_s"] for c in cands
                                                                 if c["cand_median_s"] is not None)
        if path.startswith("warm"):
            summary[f"{path}_compile_median_s"] = statistics.median(c["compile_s"] for c in cands)
            summary[f"{path}_startup_to_hello_s"] = [r[path]["startup_to_hello_s"] for r in runs]
            summary[f"{path}_warmup_eval_s"] = [r[path]["warmup_eval_s"] for r in runs]
            summary[f"{path}_reference_reused"] = sum(bool(c.get("reference_reused")) for c in cands)
    fresh_phases = [c["phases"] for r in runs for c in r["fresh"]["per_candidate"]]
    summary["fresh_phase_medians_s"] = {k: statistics.median(p[k] for p in fresh_phases if k in p)
                                        for k in fresh_phases[0]}
    # Interpreter start (before fresh_eval's first line) + exit, i.e. process wall - in-process total.
    summary["fresh_outside_script_median_s"] = statistics.median(
        c["wall_s"] - c["phases"]["in_process_total_s"] for r in runs for c in r["fresh"]["per_candidate"])
    return summary


def print_report(args, runs, summary) -> None:
    paths = summary["paths"]
    print(f"\nworker_throughput: K={args.k} candidates, x ({args.rows}, 512) f32, seeds {SEEDS}, "
          f"timing {json.dumps(TIMING)}, {os.cpu_count()} CPUs, JAX {runs[0]['warm']['jax']}\n")
    print(f"| rep | path | wall for {args.k} (s) | evals/min | vs fresh | CPU s/eval | load avg before -> after |")
    print("|---|---|---|---|---|---|---|")

    def cols(x):
        return f"{x['cpu_s_per_eval']:.2f} | {x['loadavg_before'][0]:.2f} -> {x['loadavg_after'][0]:.2f}"

    def row(rep, name, wall, epm, ratio, rest=" | "):
        print(f"| {rep} | {name} | {wall:.1f} | {epm:.1f} | {ratio:.2f}x | {rest} |")

    for r in runs:
        w, fr, rep = r["warm"], r["fresh"], r["rep"]
        row(rep, "fresh process per candidate, sequential (the seed's way)", fr["wall_s"], fr["evals_per_min"],
            1.0, cols(fr))
        row(rep, "warm worker (default), one", w["wall_s"], w["evals_per_min"], r["ratio"], cols(w))
        row(rep, "warm worker (default), incl. its start + warm-up evaluate",
            w["wall_s"] + w["startup_to_hello_s"] + w["warmup_eval_s"], w["evals_per_min_incl_startup"],
            r["ratio_incl_startup"])
        if "pool" in r:
            p, fc = r["pool"], r["fresh_concurrent"]
            row(rep, f"**warm pool**: `maxkernel bench`, {p['concurrency']} at a time (CPU s incl. start-up "
                     "+ warm-ups)", p["wall_s"], p["evals_per_min"], r["ratio_pool"], cols(p))
            row(rep, f"warm pool, whole `maxkernel bench` process (start-up + {p['warmup_tasks']} warm-up tasks)",
                p["process_wall_s"], p["evals_per_min_incl_startup"], r["ratio_pool_incl_startup"])
            row(rep, f"fresh process per candidate, {fc['concurrency']} at a time (equal concurrency)",
                fc["wall_s"], fc["evals_per_min"], r["ratio_fresh_concurrent"], cols(fc))
        if "warm_keep_caches" in r:
            wk = r["warm_keep_caches"]
            row(rep, "warm worker, MAXKERNEL_WORKER_CLEAR_CACHES=0", wk["wall_s"], wk["evals_per_min"],
                r["ratio_keep_caches"], cols(wk))
    for path in paths:
        extra = ""
        if path.startswith("warm"):
            extra = (f", candidate compile {summary[f'{path}_compile_median_s']:.2f} s, start->hello "
                     f"{'/'.join(f'{x:.2f}' for x in summary[f'{path}_startup_to_hello_s'])} s, warm-up evaluate "
                     f"{'/'.join(f'{x:.2f}' for x in summary[f'{path}_warmup_eval_s'])} s, frozen reference "
                     f"reused {summary[f'{path}_reference_reused']}x")
        print(f"{path}: median per candidate {summary[f'{path}_eval_wall_median_s']:.2f} s, candidate run "
              f"median {summary[f'{path}_cand_run_median_s'] * 1e3:.1f} ms{extra}")
    print("fresh process phase medians (s): " + ", ".join(
        f"{k}={v:.2f}" for k, v in summary["fresh_phase_medians_s"].items()))
    print(f"fresh process: python start + exit outside the script {summary['fresh_outside_script_median_s']:.2f} s")
    print("spread between reps (max-min)/mean: " + ", ".join(
        f"{p} {summary[f'{p}_spread_pct']:.1f}%" for p in paths))
    print(f"one warm worker vs fresh sequential: {', '.join(f'{x:.2f}x' for x in summary['ratio'])} "
          f"(mean {summary['ratio_mean']:.2f}x)")
    if "ratio_pool" in summary:
        print(f"HEADLINE warm pool vs fresh sequential (the seed's way): "
              f"{', '.join(f'{x:.2f}x' for x in summary['ratio_pool'])} (mean {summary['ratio_pool_mean']:.2f}x); "
              f"at equal concurrency ({'/'.join(map(str, summary['pool_concurrency']))} at a time): "
              f"{', '.join(f'{x:.2f}x' for x in summary['ratio_pool_equal_concurrency'])}")
    print(f"goal >= {GOAL_RATIO:g}x: {'MET' if summary['goal_met'] else 'NOT MET'}")
    for p in summary["problems"]:
        print(f"PROBLEM: {p}")


if __name__ == "__main__":
    sys.exit(main())
