"""The same graph search on the local host and on a two-node Ray cluster on loopback
(bench/RESULTS.md): wall time, evaluations, and what Ray adds per evaluation. Run through
bench/ray_host/run.sh (a network namespace with only loopback). Needs build-check/ and Ray."""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "ray"))
from conftest import read_journal, start_cluster, stop_cluster  # noqa: E402

CLI = os.environ.get("MAXKERNEL_CLI", str(ROOT / "build-check" / "bin" / "maxkernel"))
PYTHON = str(ROOT / ".venv" / "bin" / "python")
KERNELS = ["scale_rows", "matmul_tiles"]
SEARCH = ["--mode", "graph", "--search", "beam", "--beam", "2", "--branches", "2",
          "--budget", "evaluations=8,iterations=10", "--extra-shapes", "none"]


def search(work: Path, kernel: str, host: list, env=None):
    copy = work / f"{kernel}.py"
    shutil.copy(ROOT / "tests" / "optimize" / "kernels" / f"{kernel}.py", copy)
    store = work / f"{kernel}-{time.monotonic_ns()}.sqlite"
    start = time.monotonic()
    r = subprocess.run([CLI, "optimize", str(copy), "--python", PYTHON, "--store", str(store),
                        "--format", "json", "--no-report", *SEARCH, *host], capture_output=True,
                       text=True, env=env, cwd=work, check=False)
    wall = time.monotonic() - start
    if r.returncode != 0:
        raise SystemExit(r.stderr[-3000:])
    out = json.loads(r.stdout)
    return wall, out["cost"]["evaluations"], out["best"]["node"], round(out["best"]["speedup"], 2)


def round_trips(events, op):
    starts = {(e["driver"], e["id"]): e["t"] for e in events if e["event"] == "start"}
    return [e["t"] - starts[(e["driver"], e["id"])] for e in events
            if e["event"] == "done" and e["op"] == op and (e["driver"], e["id"]) in starts]


def relay_cost(argv, requests=20):
    """Seconds to the first hello (start: for a driver, joining and placing the actor too) and
    the median round trip of later hellos, each relayed to the worker and back."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, cwd=ROOT)

    def hello(i):
        start = time.monotonic()
        proc.stdin.write(json.dumps({"id": f"h{i}", "op": "hello"}) + "\n")
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        assert reply.get("ok"), reply
        return time.monotonic() - start

    first = hello(0)
    trips = [hello(i) for i in range(1, requests + 1)]
    proc.stdin.close()
    proc.wait(30)
    return first, statistics.median(trips)


def main():
    work = Path(tempfile.mkdtemp(prefix="mk-ray-bench"))
    cluster, temp_dir = start_cluster(work)
    try:
        print("| kernel | local | 2-node cluster | evaluations | best (local / cluster) | "
              "overhead per evaluation | evaluate round trip (median) | nodes used |")
        print("|---|---|---|---|---|---|---|---|")
        for kernel in KERNELS:
            local = search(work, kernel, [])
            journal = work / f"{kernel}.journal"
            env = dict(os.environ, MAXKERNEL_RAY_JOURNAL=str(journal))
            on_ray = search(work, kernel, ["--host", f"ray:{cluster.address}"], env)
            events = read_journal(journal)
            nodes = sorted({e["node_ip"] for e in events
                            if e["event"] == "done" and e["op"] != "hello"})
            evaluate = round_trips(events, "evaluate")
            overhead = (on_ray[0] - local[0]) / max(1, on_ray[1])
            print(f"| {kernel} | {local[0]:.1f} s | {on_ray[0]:.1f} s | {local[1]} / {on_ray[1]}"
                  f" | node {local[2]} {local[3]}x / node {on_ray[2]} {on_ray[3]}x"
                  f" | {overhead:+.2f} s | {statistics.median(evaluate):.2f} s"
                  f" | {', '.join(nodes)} |", flush=True)
        worker = str(ROOT / "tpu" / "worker" / "maxkernel_worker.py")
        direct = relay_cost([PYTHON, "-u", worker, "--lane", "timing"])
        relayed = relay_cost([PYTHON, "-u", str(ROOT / "tpu" / "ray" / "maxkernel_ray_driver.py"),
                              "--address", cluster.address, "--lane", "timing", "--bundle",
                              str(ROOT / "tpu" / "worker")])
        print()
        print("| one slot | start to the first hello | later request round trip (median of 20) |")
        print("|---|---|---|")
        print(f"| local worker | {direct[0]:.2f} s | {direct[1] * 1000:.1f} ms |")
        print(f"| Ray driver + actor + worker | {relayed[0]:.2f} s | {relayed[1] * 1000:.1f} ms |")
    finally:
        stop_cluster(cluster, temp_dir)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
