"""Statistics, checks and the printed summary of the load bench."""
import re
import statistics
import sys
from pathlib import Path

if str(Path(__file__).resolve().parents[1] / "lsp_latency") not in sys.path:
    # After this folder, so that `run` stays bench/load/run.py.
    sys.path.append(str(Path(__file__).resolve().parents[1] / "lsp_latency"))
from tail import growing_tail  # noqa: E402  (the check bench/lsp_latency applies too)

INTERACTIVE = ("textDocument/codeLens", "textDocument/hover", "textDocument/inlayHint")
SHORT = {"textDocument/codeLens": "codeLens", "textDocument/hover": "hover", "textDocument/inlayHint": "inlayHint"}
RSS_GROWTH_TOLERANCE = 0.05  # last minute vs first warm minute (medians); --rss-growth-tolerance


def pct(xs, p):
    """Linear interpolation between closest ranks (numpy's default); xs sorted."""
    pos = (len(xs) - 1) * p / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def stats_ms(samples_s):
    if not samples_s:
        return None
    xs = sorted(s * 1000.0 for s in samples_s)
    return {"n": len(xs), "p50": pct(xs, 50), "p90": pct(xs, 90), "p99": pct(xs, 99), "max": xs[-1],
            "mean": statistics.fmean(xs)}


def per_minute_p99(samples, seconds):
    """[(minute index, n, p99 ms)] over (time since start, latency s) samples."""
    out = []
    for minute in range(int(seconds // 60) + 1):
        xs = sorted(lat * 1000.0 for t, lat in samples if minute * 60 <= t < (minute + 1) * 60)
        if xs:
            out.append({"minute": minute, "n": len(xs), "p99": pct(xs, 99), "max": xs[-1]})
    return out


def rss_growth(rss, warmup, measured_s):
    """Median server RSS in the first warm window vs the last window (each up to 60 s)."""
    window = min(60.0, max(0.0, (measured_s - warmup) / 2))
    if window <= 0:
        return None
    first = [r[1] for r in rss if warmup <= r[0] < warmup + window]
    last = [r[1] for r in rss if measured_s - window <= r[0] <= measured_s]
    if not first or not last:
        return None
    a, b = statistics.median(first), statistics.median(last)
    warm = [(r[0], r[1]) for r in rss if r[0] >= warmup]
    slope = None
    if len(warm) >= 2:
        mt, mr = statistics.fmean(t for t, _ in warm), statistics.fmean(v for _, v in warm)
        den = sum((t - mt) ** 2 for t, _ in warm)
        slope = sum((t - mt) * (v - mr) for t, v in warm) / den * 60.0 if den else None
    return {"window_s": window, "first_warm_median_kib": a, "last_median_kib": b, "growth_kib": b - a,
            "growth_ratio": (b - a) / a, "warm_slope_kib_per_min": slope,
            "max_kib": max(r[1] for r in rss), "min_warm_kib": min(v for _, v in warm)}


def known(memory, key):
    """A figure the server could read (null: unknown, e.g. heap figures under a sanitizer)."""
    value = memory.get(key)
    return value is not None and value >= 0


def server_memory(status, warmup, measured_s):
    """The server's own account (maxkernel/status) in the same windows as rss_growth: malloc's
    bytes in use, SQLite's bytes (page caches of the store connections) and the resident set. A
    heap in use that keeps growing is a leak; SQLite's total stops at its cache bounds."""
    window = min(60.0, max(0.0, (measured_s - warmup) / 2))
    pts = [(t, r.get("memory", {})) for t, r in status if r.get("memory")]
    out = {"samples": [[round(t, 1), m.get("residentBytes"), m.get("heapInUseBytes"), m.get("heapHeldBytes"),
                        m.get("sqliteBytes")] for t, m in pts]}
    if window <= 0:
        return out
    for key in ("heapInUseBytes", "heapHeldBytes", "sqliteBytes", "residentBytes"):
        first = [m[key] for t, m in pts if warmup <= t < warmup + window and known(m, key)]
        last = [m[key] for t, m in pts if measured_s - window <= t <= measured_s and known(m, key)]
        if first and last:
            a, b = statistics.median(first), statistics.median(last)
            out[key] = {"first_warm_median": a, "last_median": b, "growth_ratio": (b - a) / a if a else None,
                        "max": max(m[key] for _, m in pts if known(m, key))}
    peaks = [m.get("sqlitePeakBytes") for _, m in pts if m.get("sqlitePeakBytes") is not None]
    out["sqlite_peak_bytes"] = max(peaks, default=None)
    return out


def main_thread_per_minute(rss):
    """Per minute: CPU ms the server's main thread ran and ms it waited, runnable, for a CPU
    (/proc schedstat). Much waiting next to little running means the machine starved the server."""
    out = []
    pts = [(r[0], r[6], r[7]) for r in rss if len(r) > 7 and r[6] is not None]
    for minute in range(int(pts[-1][0] // 60) + 1 if pts else 0):
        win = [p for p in pts if minute * 60 <= p[0] <= (minute + 1) * 60]
        if len(win) >= 2:
            out.append({"minute": minute, "run_ms": (win[-1][1] - win[0][1]) / 1e6,
                        "runqueue_wait_ms": (win[-1][2] - win[0][2]) / 1e6})
    return out


def goals_for(goal_ms, rss_growth_tolerance, p99s, worst_minute, growth, interleaved=None):
    """The goals docs/reliability.md sets: p99 under goal_ms for every interactive request over the
    run and in every minute, RSS growth once warm under the tolerance (unknown growth is not
    met), and, with `interleaved` ({"codeLens": [s...], "hover": [s...]}), no latency that grows
    with the requests served. A goal not met fails the bench like a check."""
    goals = {
        f"interactive_p99_lt_{goal_ms:g}ms": bool(p99s) and all(v < goal_ms for v in p99s.values()),
        f"interactive_p99_lt_{goal_ms:g}ms_every_minute":
            bool(worst_minute) and all(v is not None and v < goal_ms for v in worst_minute.values()),
        f"no_rss_growth_once_warm_(<{rss_growth_tolerance:.0%})":
            growth is not None and growth["growth_ratio"] < rss_growth_tolerance,
    }
    if interleaved is not None:
        goals["interleaved_tail_not_growing"] = bool(interleaved.get("codeLens")) and not any(
            growing_tail(v) for v in interleaved.values())
    return goals


def summarize(args, bench, run_info):
    measured = run_info["measured_s"]
    latency = {}
    for m in INTERACTIVE:
        ok = [(t, lat) for t, lat, good in bench.samples[m] if good]
        latency[SHORT[m]] = {"all_replies": stats_ms([lat for _, lat, _ in bench.samples[m]]),
                             "successful": stats_ms([lat for _, lat in ok]),
                             "errors": bench.errors[m], "results": bench.results[m],
                             "per_minute": per_minute_p99([(t, lat) for t, lat, _ in bench.samples[m]], measured)}
    changes = [(t, lat) for t, lat, _ in bench.change_samples]
    latency["didChange->publishDiagnostics"] = {
        "all": stats_ms([lat for _, lat in changes]),
        "own_version": stats_ms([lat for _, lat, co in bench.change_samples if not co]),
        "coalesced": sum(1 for *_, co in bench.change_samples if co),
        "per_minute": per_minute_p99(changes, measured)}

    counts = {}
    for method, _ in bench.sent.values():
        counts[method] = counts.get(method, 0) + 1
    duplicated = {rid: n for rid, n in bench.replies.items() if n > 1}
    missing = bench.missing_replies()
    unpublished = sum(len(v) for v in bench.unpublished.values())

    bad_tokens = {}
    for token, kinds in bench.progress.items():
        if not kinds or kinds[0] != "begin" or kinds.count("begin") != 1 or kinds.count("end") != 1 \
                or kinds[-1] != "end":
            bad_tokens[token] = kinds
    never_begun = sorted(bench.created_tokens - set(bench.progress))
    jobs = {}
    for j in bench.finished_jobs:
        s = jobs.setdefault(j["kind"], {"finished": 0, "failed_to_start": 0, "seconds": [], "outcomes": {}})
        if j["failed"]:
            s["failed_to_start"] += 1
            continue
        s["finished"] += 1
        s["seconds"].append(j["seconds"])
        outcome = re.sub(r"\d+(\.\d+)?", "#", j["last_message"] or "")[:70]  # group alike messages
        s["outcomes"][outcome] = s["outcomes"].get(outcome, 0) + 1
    for s in jobs.values():
        secs = sorted(s.pop("seconds"))
        s["seconds_p50"] = pct(secs, 50) if secs else None
        s["seconds_max"] = secs[-1] if secs else None

    growth = rss_growth(bench.rss, args.warmup, measured)
    own = server_memory(bench.status, args.warmup, measured)
    sched = main_thread_per_minute(bench.rss)
    loads = [r[5] for r in bench.rss]
    p99s = {k: latency[k]["all_replies"]["p99"] for k in SHORT.values() if latency[k]["all_replies"]}
    worst_minute = {k: max((x["p99"] for x in latency[k]["per_minute"]), default=None) for k in SHORT.values()}
    checks = {
        "every_request_answered_once": not missing and not duplicated and not bench.unknown_replies,
        "progress_tokens_pair_up": not bad_tokens and not never_begun and not bench.progress_after_end,
        "every_change_published": unpublished == 0,
        "no_job_left_running": not run_info["jobs_still_running"],
    }
    interleaved = run_info.get("interleaved")
    if interleaved is not None:
        latency["interleaved"] = {k: stats_ms(v) for k, v in interleaved.items()}
    goals = goals_for(args.goal_ms, args.rss_growth_tolerance, p99s, worst_minute, growth, interleaved)
    checks["all_passed"] = all(checks.values())
    return {
        "workload": {"seconds": args.seconds, "warmup_s": args.warmup, "docs": args.docs, "task_docs": args.task_docs,
                     "lines_per_module": args.lines, "keys_per_second": args.keys_per_second,
                     "requests_per_second": args.requests_per_second, "jobs": args.jobs,
                     "auto_budget": {"maxIterations": args.auto_iterations, "patience": 1}, "seed": args.seed,
                     "keystrokes": bench.keystrokes, "requests_sent": counts,
                     "publishDiagnostics_received": bench.publishes,
                     "percentiles": "linear interpolation between closest ranks"},
        "run": run_info,
        "latency_ms": latency,
        "replies": {"missing": missing[:50], "duplicated": duplicated, "unknown": bench.unknown_replies[:20],
                    "changes_without_diagnostics": unpublished},
        "progress": {"tokens": len(bench.progress), "created_by_server": len(bench.created_tokens),
                     "unpaired": bad_tokens,
                     "unpaired_log": {t: bench.progress_log.get(t, [])[-20:] for t in bad_tokens},
                     "created_never_begun": never_begun,
                     "reports_after_end": bench.progress_after_end},
        "server_requests": bench.server_requests,
        "jobs": jobs, "job_errors": bench.job_errors[:20], "jobs_finished": bench.finished_jobs,
        "memory": {"growth": growth, "server_account": own, "threads_max": max((r[2] for r in bench.rss), default=None),
                   "threads_last": bench.rss[-1][2] if bench.rss else None,
                   "workers_max": max((r[3] for r in bench.rss), default=None),
                   "workers_rss_max_kib": max((r[4] for r in bench.rss), default=None),
                   "samples": [[round(r[0], 1), r[1], r[2], r[3], r[4]] for r in bench.rss]},
        "main_thread_per_minute": sched,
        "load_average": {"min": min(loads, default=None), "mean": statistics.fmean(loads) if loads else None,
                         "max": max(loads, default=None)},
        "checks": checks,
        "goals": goals,
    }


def failures(report):
    """What makes the bench fail (exit 1): every check that failed and every goal not met."""
    out = [f"check {k} failed" for k, v in report["checks"].items() if k != "all_passed" and not v]
    out += [f"goal {k} not met" for k, v in report["goals"].items() if not v]
    return out


def fmt(x):
    return "—" if x is None else (f"{x:.1f}" if x < 100 else f"{x:.0f}")


def print_summary(r):
    w = r["workload"]
    interactive = sum(w["requests_sent"].get(m, 0) for m in INTERACTIVE)
    print(f"load: {r['run']['measured_s']:.0f} s, {w['docs']} documents ({w['task_docs']} with a task), "
          f"{w['keystrokes']} keystrokes ({w['keystrokes'] / r['run']['measured_s']:.1f}/s), {interactive} interactive "
          f"requests, {w['jobs']} background jobs; load average {fmt(r['load_average']['mean'])} mean, "
          f"{fmt(r['load_average']['max'])} max on {r['machine']['cpus']} CPUs")
    print()
    print("| measurement | n | p50 ms | p99 ms | max ms | worst minute p99 ms | errors |")
    print("|---|---:|---:|---:|---:|---:|---|")
    lat = r["latency_ms"]
    for key in SHORT.values():
        s = lat[key]["all_replies"]
        worst = max((x["p99"] for x in lat[key]["per_minute"]), default=None)
        errs = ", ".join(f"{c}: {n}" for c, n in lat[key]["errors"].items()) or "none"
        if s:
            print(f"| {key} | {s['n']} | {fmt(s['p50'])} | {fmt(s['p99'])} | {fmt(s['max'])} | {fmt(worst)} | {errs} |")
    c = lat["didChange->publishDiagnostics"]
    if c["all"]:
        worst = max((x["p99"] for x in c["per_minute"]), default=None)
        print(f"| didChange → publishDiagnostics | {c['all']['n']} | {fmt(c['all']['p50'])} | {fmt(c['all']['p99'])} "
              f"| {fmt(c['all']['max'])} | {fmt(worst)} | {c['coalesced']} coalesced |")
    print()
    g = r["memory"]["growth"]
    if g:
        print(f"server RSS: first warm {g['window_s']:.0f} s median {g['first_warm_median_kib'] / 1024:.1f} MiB, "
              f"last {g['window_s']:.0f} s median {g['last_median_kib'] / 1024:.1f} MiB "
              f"({g['growth_kib'] / 1024:+.1f} MiB, {g['growth_ratio']:+.1%}); warm slope "
              f"{fmt((g['warm_slope_kib_per_min'] or 0) / 1024)} MiB/min; max {g['max_kib'] / 1024:.1f} MiB; "
              f"threads max {r['memory']['threads_max']}, workers max {r['memory']['workers_max']}")
    own = r["memory"].get("server_account") or {}
    parts = [(label, own[key]) for label, key in (("heap in use", "heapInUseBytes"), ("heap held", "heapHeldBytes"),
                                                   ("SQLite", "sqliteBytes")) if key in own]
    if parts:
        print("server's own account (maxkernel/status), first warm -> last median: " + "; ".join(
            f"{label} {v['first_warm_median'] / 2**20:.1f} -> {v['last_median'] / 2**20:.1f} MiB "
            f"({(v['growth_ratio'] or 0):+.1%})" for label, v in parts))
    for kind, s in r["jobs"].items():
        print(f"job {kind}: {s['finished']} finished (p50 {fmt(s['seconds_p50'])} s, max {fmt(s['seconds_max'])} s), "
              f"{s['failed_to_start']} refused; outcomes {s['outcomes']}")
    if r.get("main_thread_per_minute"):
        print("main thread per minute, ms run / ms waiting for a CPU: " + ", ".join(
            f"{x['run_ms']:.0f}/{x['runqueue_wait_ms']:.0f}" for x in r["main_thread_per_minute"]))
    print(f"progress tokens: {r['progress']['tokens']} ({r['progress']['created_by_server']} created by the server), "
          f"unpaired {len(r['progress']['unpaired'])}; replies missing {len(r['replies']['missing'])}, duplicated "
          f"{len(r['replies']['duplicated'])}, unknown {len(r['replies']['unknown'])}; slow-turn warnings "
          f"{len(r['slow_turn_warnings'])}; exit code {r['exit_code']}")
    print("checks: " + ", ".join(f"{k}={'ok' if v else 'FAILED'}" for k, v in r["checks"].items() if k != "all_passed"))
    print("goals: " + ", ".join(f"{k}={'met' if v else 'NOT met'}" for k, v in r["goals"].items()))
