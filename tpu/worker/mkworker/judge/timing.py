"""What the judge's timing (judge.judge.time_programs, judge.clock's loop) needs beyond the loop: the
profiler's device time, and what the timing says: stale timed outputs, a time below the
roofline, the speedup."""

from __future__ import annotations

import shutil

from mkworker import scratch
from mkworker.cost import profile
from mkworker.cost import work as cost_work
from mkworker.judge import clock


def device_time(compiled, sets, runs, label):
    """Device time of `runs` calls from a jax.profiler trace (judge.clock.device_run_times)."""
    out_dir = scratch.numbered_dir(f"timed_{{n}}_{label}")
    try:
        module, _ = profile.entry_ops(compiled.as_text() or "")
        clock.profile_runs(compiled, sets, runs, out_dir)
        trace_file, _ = profile.find_trace_file(out_dir)
        if trace_file is None:
            return {"error": "jax.profiler wrote no trace"}
        found = clock.device_run_times(clock.load_trace_events(trace_file), module, runs)
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
        roof = cost_work.roofline(ref, hardware)
        if roof:
            c = timing["candidate"]
            measured = (c.get("device") or {}).get("median_s") or c.get("median_s")
            fail = cost_work.below_roofline(measured, roof)
            roof.update(measured_s=measured, below=fail is not None)
            res["roofline"] = roof
            return fail
    return None
