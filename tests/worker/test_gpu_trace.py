"""Device time and the profile summary read from a GPU's profiler trace (a constructed trace in
the layout the CUPTI tracer writes: one row per CUDA stream holding the kernels, each with its
XLA op and module, beside rows derived from them that hold the same time again)."""

import gzip
import json
import os
import sys

from worker_harness import ROOT

sys.path.insert(0, os.path.join(ROOT, "tpu", "worker"))


def _meta(pid, tid=None, proc=None, thread=None):
    if proc is not None:
        return {"ph": "M", "name": "process_name", "pid": pid, "args": {"name": proc}}
    return {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": thread}}


COMPUTE, COPY, OPS, MODULES = 5, 6, 100, 101


def _gpu_trace(runs, annotation):
    """Per run: a Pallas (Triton) kernel of 30 us and an XLA fusion of 10 us on the compute
    stream, a 4 us copy on a copy stream; the derived "XLA Ops" and "XLA Modules" rows repeat
    them (and would double the time if summed)."""
    ev = [_meta(1, proc="/host:CPU"), _meta(9, proc="/device:GPU:0"),
          _meta(9, COMPUTE, thread="Stream #13(Compute)"),
          _meta(9, COPY, thread="Stream #14(MemcpyD2D)"),
          _meta(9, OPS, thread="XLA Ops"), _meta(9, MODULES, thread="XLA Modules")]
    for i in range(runs):
        t = 1000.0 * (i + 1)
        ev.append({"ph": "X", "name": f"{annotation}/{i}", "pid": 1, "tid": 2, "ts": t, "dur": 200.0})
        kernels = (("_matmul_kernel", "custom-call.1", 30.0, COMPUTE),
                   ("loop_add_fusion", "fusion.2", 10.0, COMPUTE),
                   ("MemcpyD2D", "copy.3", 4.0, COPY))
        at = t + 20
        for name, op, dur, tid in kernels:
            ev.append({"ph": "X", "name": name, "pid": 9, "tid": tid, "ts": at, "dur": dur,
                       "args": {"hlo_op": op, "hlo_module": "jit_f", "correlation_id": 7}})
            ev.append({"ph": "X", "name": op, "pid": 9, "tid": OPS, "ts": at, "dur": dur + 1,
                       "args": {"hlo_op": op, "hlo_module": "jit_f"}})
            at += dur
        ev.append({"ph": "X", "name": "jit_f", "pid": 9, "tid": MODULES, "ts": t + 20, "dur": 45.0,
                   "args": {"hlo_module": "jit_f"}})
        ev.append({"ph": "X", "name": "_matmul_kernel", "pid": 9, "tid": COMPUTE, "ts": t + 100,
                   "dur": 50.0, "args": {"hlo_op": "custom-call.1", "hlo_module": "jit_other"}})
    return ev


def test_gpu_device_time_sums_the_stream_rows_only():
    from mkworker.judge import clock

    out = clock.device_run_times(_gpu_trace(3, clock.TIMED_ANNOTATION), "jit_f", 3)
    assert out["attribution"] == "annotations"
    assert out["events"] == 9  # three kernels per run, on two streams; not the derived rows
    assert out["run_s"] == [44e-6, 44e-6, 44e-6]


def test_gpu_profile_summary_counts_each_kernel_once_and_finds_the_pallas_share(tmp_path):
    from mkworker.cost import profile

    path = tmp_path / "perfetto_trace.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        json.dump({"traceEvents": _gpu_trace(2, profile.RUN_ANNOTATION)}, f)
    ops = {"custom-call.1": "jit(f)/mk_pallas_0__matmul_kernel/pallas_call",
           "fusion.2": "jit(f)/add", "copy.3": "jit(f)/copy"}
    s = profile.summarize(str(path), "jit_f", ops, ["_matmul_kernel"], 2, "gpu")
    assert s["measured"] == "device"
    assert s["matched_events"] == 6
    assert s["op_time_per_run_us"] == 44.0
    assert s["pallas_time_us"] == 60.0
    assert s["pallas_share"] == round(30 / 44, 4)
    assert s["kernels"][0]["kernel"] == "_matmul_kernel" and s["kernels"][0]["per_run_us"] == 30.0


def test_tpu_trace_still_counts_its_op_row():
    """A TPU's ops sit on its "XLA Ops" row (no stream rows): that row is the one counted."""
    from mkworker.judge import clock

    ev = [_meta(1, proc="/host:CPU"), _meta(7, proc="/device:TPU:0"),
          _meta(7, 1, thread="XLA Ops"), _meta(7, 2, thread="XLA Modules"),
          {"ph": "X", "name": f"{clock.TIMED_ANNOTATION}/0", "pid": 1, "tid": 2, "ts": 0.0,
           "dur": 100.0},
          {"ph": "X", "name": "fusion.1", "pid": 7, "tid": 1, "ts": 10.0, "dur": 7.0,
           "args": {"hlo_op": "fusion.1", "hlo_module": "jit_f"}},
          {"ph": "X", "name": "jit_f", "pid": 7, "tid": 2, "ts": 10.0, "dur": 9.0,
           "args": {"hlo_module": "jit_f"}}]
    out = clock.device_run_times(ev, "jit_f", 1)
    assert out["events"] == 1 and out["run_s"] == [7e-6]
