"""What a `maxkernel bench SUITE --optimize --store FILE` run left in its store, as tables for
bench/RESULTS.md: per task the class, the first kernel's and the best kernel's speedup vs XLA
(with the basis), why a correct kernel was not compared, and per class and over the suite the
geomean and fast_p; then the time and memory of every TPU compile the nodes record.

    python3 bench/calibration/store_summary.py STORE.db [LATER.db ...]

With several stores, a task run in a later one replaces its row from the earlier ones (a
subset run again after a fix), and the row says which store it came from. Reads the stores
only (SQLite); runs nothing.

--hbm-floor rescores runs stored before the worker floored each compiled program at its inputs
and outputs moved once at HBM bandwidth (tpu_compiler.compiler.result_of): both programs'
predicted seconds are raised to the task's minimum bytes at the generation's bandwidth (the
same floor: a program's inputs and outputs are the task's), and the speedups recomputed."""

from __future__ import annotations

import json
import math
import sqlite3
import statistics
import sys
from collections import defaultdict

BASIS = {"compiled": "TPU compiler", "predicted": "model", "device": "device"}


def task_name(path: str) -> str:
    parts = path.replace("\\", "/").split("/")
    return "/".join(parts[-3:-1])


def geomean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def load(db: str):
    con = sqlite3.connect(db)
    runs = con.execute("select id, file, status, stop_reason, best_node from runs order by created_at")
    out = []
    for run_id, file, status, stop, best in runs.fetchall():
        nodes = con.execute(
            "select id, strategy, status, speedup, time_kind, metrics_json, error, "
            "finished_at - created_at from nodes where run_id = ? order by id", (run_id,)).fetchall()
        out.append({"run": run_id, "task": task_name(file), "status": status, "stop": stop,
                    "nodes": [dict(zip(("id", "strategy", "status", "speedup", "time_kind", "metrics",
                                        "error", "seconds"), n)) for n in nodes]})
    return out


def _bandwidths() -> dict:
    path = __file__.rsplit("/bench/", 1)[0] + "/knowledge/data/tpu_generations.json"
    with open(path, encoding="utf-8") as f:
        rows = json.load(f)["generations"]
    return {g["name"]: g.get("hbm_bandwidth_bytes_per_s") for g in rows}


def _floored(nodes, bandwidth: dict) -> None:
    """Each compiled-basis speedup recomputed with both programs at no less than the task's
    minimum bytes at HBM bandwidth (see the module doc)."""
    ref = next((n for n in nodes if json.loads(n["metrics"] or "{}").get("reference")), None)
    ref_tc = json.loads(ref["metrics"] or "{}").get("tpu_compile") if ref else None
    if not isinstance(ref_tc, dict) or not ref_tc.get("predicted_s"):
        return
    for n in nodes:
        if n is ref or n["time_kind"] != "compiled" or not n["speedup"]:
            continue
        m = json.loads(n["metrics"] or "{}")
        cand = (m.get("tpu_compile") or {}).get("candidate") or {}
        work = m.get("task_work") or {}
        bw = bandwidth.get(cand.get("generation") or ref_tc.get("generation"))
        if not cand.get("predicted_s") or not work.get("min_bytes") or not bw:
            continue
        floor = work["min_bytes"] / bw
        n["speedup"] = max(ref_tc["predicted_s"], floor) / max(cand["predicted_s"], floor)


def summarise(run):
    nodes = run["nodes"]
    cands = [n for n in nodes if n["id"] > 0]
    first = next((n for n in cands if n["strategy"].startswith("generated:")), None)
    correct = [n for n in cands if n["status"] == "correct"]
    scored = [n for n in correct if n["speedup"]]
    best = max(scored, key=lambda n: n["speedup"]) if scored else None
    unscored = ""
    for n in correct:
        if not n["speedup"]:
            unscored = json.loads(n["metrics"] or "{}").get("unscored", "no comparable score")
            break
    done = run["status"] == "done"
    stand_ins = _stand_ins(nodes, best) if best is not None and best["time_kind"] == "compiled" else []
    why_model = ""
    if best is not None and best["time_kind"] == "predicted":
        why_model = _why_not_compiled(nodes, best)
    return {
        "why_model": why_model,
        "done": done,
        "task": run["task"],
        "class": first["strategy"].split(":", 1)[1] if first else "none",
        "correct": bool(correct),
        "first": first["speedup"] if first and first["status"] == "correct" else None,
        "first_status": first["status"] if first else "-",
        "best": best["speedup"] if best else None,
        "basis": BASIS.get(best["time_kind"], best["time_kind"]) if best else "",
        "stand_ins": stand_ins,
        "evaluations": len(nodes),
        "unscored": unscored if not best and correct else "",
        "error": (next((n["error"][:160] for n in cands if n["error"]), "") if not correct else "")
        if done else f"not finished (run {run['status']}): left out of the counts",
    }


def _stand_ins(nodes, best) -> list[str]:
    """What the compiler-basis score of the best kernel and of XLA's program took from beyond
    libtpu's static profile at full size: XLA's cost model for an op the profile left at 0,
    the bytes a 0-cycle copy moves, a compile with the count axes cut."""
    out = []
    ref = next((n for n in nodes if json.loads(n["metrics"] or "{}").get("reference")), None)
    for side, node in (("XLA's", ref), ("the kernel's", best)):
        tc = json.loads(node["metrics"] or "{}").get("tpu_compile") if node else None
        rec = tc.get("candidate", tc) if isinstance(tc, dict) else None
        rec = rec or {}
        for op in rec.get("cost_model_ops") or {}:
            out.append(f"{side} {op} at XLA's cost model")
        if rec.get("moved_bytes_ops"):
            out.append(f"{side} {len(rec['moved_bytes_ops'])} 0-cycle copies at HBM bandwidth")
        if rec.get("hbm_floor"):
            out.append(f"{side} program at its inputs and outputs moved once at HBM bandwidth")
        ext = rec.get("extrapolated")
        if isinstance(ext, dict):
            out.append(f"{side} program compiled with count axes {ext.get('count_axes')} "
                       f"(x{ext.get('factor'):g})")
    return out


def _compile_said(tc) -> str:
    if not isinstance(tc, dict):
        return "no compile record"
    if tc.get("status") == "compiled":
        return tc.get("cycles_note") or "compiled"
    return f"{tc.get('status')}: {tc.get('reason') or tc.get('error') or ''}"[:140]


def _why_not_compiled(nodes, best) -> str:
    """Why a model-basis row has no compiler-basis speedup: what the compile of XLA's program
    (the reference node's record) or else of the kernel said."""
    ref = next((n for n in nodes if json.loads(n["metrics"] or "{}").get("reference")), None)
    ref_tc = json.loads(ref["metrics"] or "{}").get("tpu_compile") if ref else None
    if not (isinstance(ref_tc, dict) and ref_tc.get("status") == "compiled" and ref_tc.get("cycles")):
        return "XLA's program: " + _compile_said(ref_tc)
    tc = json.loads(best["metrics"] or "{}").get("tpu_compile") or {}
    return "the kernel: " + _compile_said(tc.get("candidate", tc))


def compiles(runs):
    """Every distinct compile a node records: (compile_s, rss_peak_bytes, status)."""
    seen, out = set(), []
    for run in runs:
        for n in run["nodes"]:
            tc = json.loads(n["metrics"] or "{}").get("tpu_compile")
            if not isinstance(tc, dict):
                continue
            for side in ([tc] if "compile_s" in tc or "status" in tc and "candidate" not in tc
                         else [tc.get("candidate"), tc.get("reference")]):
                if not isinstance(side, dict):
                    continue
                key = (side.get("cycles"), side.get("compile_s"), side.get("status"))
                if key in seen:
                    continue
                seen.add(key)
                out.append((side.get("compile_s") or side.get("wall_s"), side.get("rss_peak_bytes"),
                            side.get("status")))
    return out


def fmt(x):
    return f"{x:.2f}x" if x else "-"


def main(argv):
    stores = [a for a in argv[1:] if not a.startswith("--")]
    bandwidth = _bandwidths() if "--hbm-floor" in argv else None
    by_task, runs = {}, []
    for i, db in enumerate(stores):
        for r in load(db):
            r["store"] = i
            if bandwidth:
                _floored(r["nodes"], bandwidth)
            by_task[r["task"]] = r
    runs = list(by_task.values())
    every = []
    for r in runs:
        row = summarise(r)
        if r["store"]:
            row["from"] = f" (rerun: {stores[r['store']]})"
        every.append(row)
    rows = [r for r in every if r["done"]]
    print("| task | class | correct | first kernel | best | basis | evaluations | note |")
    print("|---|---|---|---|---|---|---|---|")
    for r in every:
        note = r["unscored"] or r["error"] or r["why_model"]
        if r["stand_ins"]:
            note = "; ".join(r["stand_ins"])
        note += r.get("from", "")
        print(f"| {r['task']} | {r['class']} | {'yes' if r['correct'] else 'no'} | {fmt(r['first'])} | "
              f"{fmt(r['best'])} | {r['basis']} | {r['evaluations']} | {note} |")
    by_class = defaultdict(list)
    for r in rows:
        by_class[r["class"]].append(r)
    print("\n| class | tasks | correct | compared on the compiler basis | geomean first | geomean best | min best |")
    print("|---|---|---|---|---|---|---|")
    for name, rs in sorted(by_class.items()):
        comp = [r for r in rs if r["basis"] == "TPU compiler"]
        print(f"| {name} | {len(rs)} | {sum(r['correct'] for r in rs)} | {len(comp)} | "
              f"{fmt(geomean([r['first'] for r in comp]))} | {fmt(geomean([r['best'] for r in comp]))} | "
              f"{fmt(min((r['best'] for r in comp), default=None))} |")
    comp = [r for r in rows if r["basis"] == "TPU compiler"]
    print(f"\ntasks {len(rows)}, correct {sum(r['correct'] for r in rows)}, compared on the TPU "
          f"compiler basis {len(comp)}; geomean first {fmt(geomean([r['first'] for r in comp]))}, "
          f"best {fmt(geomean([r['best'] for r in comp]))}")
    alone = [r for r in comp if not r["stand_ins"]]
    print(f"on the full-size static profile alone (nothing stood in): {len(alone)} tasks, geomean first "
          f"{fmt(geomean([r['first'] for r in alone]))}, best {fmt(geomean([r['best'] for r in alone]))}")
    for p in (1.0, 1.2, 1.5, 2.0):
        n = sum(1 for r in comp if r["best"] and r["best"] > p)
        print(f"fast_{p}: {n}/{len(rows)} = {n / len(rows):.2f}" if rows else "")
    cs = compiles(runs)
    secs = [c[0] for c in cs if c[0]]
    mem = [c[1] for c in cs if c[1]]
    status = defaultdict(int)
    for c in cs:
        status[c[2]] += 1
    if secs:
        print(f"\ncompiles recorded: {len(cs)} ({dict(status)}); time median {statistics.median(secs):.1f} s, "
              f"max {max(secs):.1f} s")
    if mem:
        print(f"compile child's peak memory: median {statistics.median(mem) / 2**30:.2f} GiB, "
              f"max {max(mem) / 2**30:.2f} GiB")


if __name__ == "__main__":
    main(sys.argv)
