"""Timing a checked candidate against the frozen reference (mkw_clock's loop, the profiler's
device time), and what the timing says: stale timed outputs, a time below the roofline, the
speedup."""

from __future__ import annotations

import shutil

import mkw_clock
import mkw_golden
import mkw_profile
import mkw_run
import mkw_scratch
import mkw_shrink
import mkw_work


def time_pair(cand_compiled, golden: mkw_golden.Golden, mode, cfg, cancel, with_reference=True, plat=None):
    """Times the candidate (and the reference) with mkw_clock's bound loop. The last output of
    every input set is kept and checked against the golden outputs afterwards, so a candidate
    that is right while checked and returns stale or skipped results while timed is caught
    (`timed_outputs`). On a TPU/GPU the device time of the same calls comes from a profiler
    trace (`device` in each side's stats)."""
    sets = [(s.args, s.kwargs) for s in golden.sets]
    timed_outs: list = []
    with mode.context():
        cand = mkw_clock.time_fn(cand_compiled, sets, cfg, cancel, outputs=timed_outs)
        ref = mkw_clock.time_fn(golden.ref_compiled, sets, cfg, cancel) if with_reference else None
    out = {"candidate": cand, "reference": ref, "config": cfg, "time_kind": mode.time_kind,
           "instance": mkw_shrink.label(golden.task)}
    out["timed_outputs"] = check_timed_outputs(timed_outs, golden, plat or mkw_run.platform())
    if mode.time_kind == "device":
        runs = max(1, min(int(cfg.get("min_runs", 20)), 20))
        with mode.context():
            cand["device"] = device_time(cand_compiled, sets, runs, "candidate")
            if ref is not None:
                ref["device"] = device_time(golden.ref_compiled, sets, runs, "reference")
    return out


def check_timed_outputs(outputs, golden: mkw_golden.Golden, plat) -> dict:
    accept_dtype = bool(getattr(golden.task, "accept_dtype_difference", False))
    tol = golden.task.tolerances if golden.task is not None else None
    for s, out, gold in zip(golden.sets, outputs, golden.outputs):
        cmp = mkw_run.compare(out, gold, tol, plat, accept_dtype)
        if not cmp["ok"]:
            return {"ok": False, "checked": len(outputs), "failure": {
                "kind": "timed_outputs_differ", "seed": s.seed,
                "message": (f"seed {s.seed}: the outputs of the timed runs differ from the checked ones "
                            f"({cmp['message']}): the candidate keeps state or caches results across calls")}}
    return {"ok": True, "checked": len(outputs)}


def device_time(compiled, sets, runs, label):
    """Device time of `runs` calls from a jax.profiler trace (mkw_clock.device_run_times)."""
    out_dir = mkw_scratch.numbered_dir(f"timed_{{n}}_{label}")
    try:
        module, _ = mkw_profile.entry_ops(compiled.as_text() or "")
        mkw_clock.profile_runs(compiled, sets, runs, out_dir)
        trace_file, _ = mkw_profile.find_trace_file(out_dir)
        if trace_file is None:
            return {"error": "jax.profiler wrote no trace"}
        found = mkw_clock.device_run_times(mkw_clock.load_trace_events(trace_file), module, runs)
        return found if found is not None else {"error": "the trace has no device op events"}
    except Exception as e:  # noqa: BLE001 - the wall-clock timing stands on its own
        return {"error": f"{type(e).__name__}: {str(e)[:300]}"}
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def speedup(timing):
    """(speedup, clock): from the profiler's device medians when both sides have one."""
    c, r = timing["candidate"], timing["reference"] or {}
    cd, rd = (c.get("device") or {}).get("median_s"), (r.get("device") or {}).get("median_s")
    if cd and rd:
        return rd / cd, "profiler"
    cm, rm = c.get("median_s"), r.get("median_s")
    return ((rm / cm) if cm and rm else None), "wall"


def timing_verdict(res, timing, work, hardware):
    """Timed outputs that differ, or a time below the hardware's roofline, make the result not
    correct (never a speedup)."""
    bad = timing.get("timed_outputs") or {}
    if bad.get("ok") is False:
        return bad["failure"]
    ref = (work or {}).get("reference")
    if hardware and ref:
        roof = mkw_work.roofline(ref, hardware)
        if roof:
            c = timing["candidate"]
            measured = (c.get("device") or {}).get("median_s") or c.get("median_s")
            fail = mkw_work.below_roofline(measured, roof)
            roof.update(measured_s=measured, below=fail is not None)
            res["roofline"] = roof
            return fail
    return None
