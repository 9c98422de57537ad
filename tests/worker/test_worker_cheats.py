"""The worker's defences against candidates that fake their measurements (issue 16).

Each file in tasks/cheats/ is an in-file task with one cheat, marked `# cheat` on the line the
verdict must point at. A second, "held-out" set spells the same tricks differently, so the gate is
not matching one spelling; the harmless look-alikes must pass. The table of defences is in
docs/worker-protocol.md ("Defences against faked measurements").
"""

import glob
import gzip
import json
import os
import sys
import time

import pytest
from worker_harness import ROOT, marker_line, read_task, task_path

sys.path.insert(0, os.path.join(ROOT, "tpu", "worker"))

from mkworker.sandbox import gate

FAST = {"min_runs": 3, "min_seconds": 0.0, "max_seconds": 1.0}

MOD_ATTR = ("assigns `{t}`, an attribute of the imported `{r}`: a candidate may not change what it imports "
            "(the worker's clock and checks use the same modules)")
FOREIGN = ("assigns the attribute `{a}` of `{e}`, an object the candidate did not create: only `self`, `cls` "
           "and the candidate's own functions, classes and their instances may be changed")
INTRO = "{w}: introspection and low-level modules reach and change the worker's state"
CONC = "{w}: a candidate may not start threads or processes, or signal them"
WORKER = "{w}: a candidate may not read the worker's state or the task's reference"
DUNDER = ("uses `{n}`: it reaches functions' globals, code, frames or the class tree, the way around every "
          "other check")
DYN = "uses `{n}`: code or names built at run time cannot be checked"
ENV = "{w}: it changes the process environment or JAX's global configuration, which the worker and the reference share"
FD = "{w}: a candidate may not write to or reopen file descriptors (the worker's protocol stream is one)"

# file -> (rule, text, how many further violations)
PRIMARY = {
    "clock_rebind.py": ("module-attribute", MOD_ATTR.format(t="time.perf_counter", r="time"), 0),
    "block_rebind.py": ("module-attribute", MOD_ATTR.format(t="jax.block_until_ready", r="jax"), 0),
    "array_method.py": ("foreign-attribute", FOREIGN.format(a="block_until_ready", e="type(x)"), 0),
    "sys_modules.py": ("worker-state", WORKER.format(w="uses `sys.modules`"), 0),
    "worker_import.py": ("worker-state", WORKER.format(w="imports `mkworker.judge.golden`"), 0),
    "gc_objects.py": ("introspection", INTRO.format(w="imports `gc`"), 0),
    "frame_walk.py": ("introspection", INTRO.format(w="uses `sys._getframe`"), 0),
    "thread_start.py": ("concurrency", CONC.format(w="imports `threading`"), 0),
    "subprocess_run.py": ("concurrency", CONC.format(w="imports `subprocess`"), 0),
    "os_fork.py": ("concurrency", CONC.format(w="uses `os.fork`"), 0),
    "environ_write.py": ("environment", ENV.format(w="changes `os.environ`"), 0),
    "setattr_module.py": ("module-attribute", MOD_ATTR.format(t="jax.numpy.allclose", r="jax.numpy"), 0),
    "exec_string.py": ("dynamic-code", DYN.format(n="exec"), 0),
    "protocol_forge.py": ("file-descriptor", FD.format(w="uses `os.write`"), 0),
    "builtins_rebind.py": ("introspection", INTRO.format(w="imports `builtins`"), 1),
    "dunder_globals.py": ("dunder", DUNDER.format(n="__globals__"), 0),
    "config_update.py": ("environment", ENV.format(w="uses `jax.config.update`"), 0),
}

HELD_OUT = {
    "heldout_alias_import.py": ("module-attribute", MOD_ATTR.format(t="time.perf_counter", r="time"), 0),
    "heldout_setattr_clock.py": ("module-attribute", MOD_ATTR.format(t="time.perf_counter", r="time"), 0),
    "heldout_alias_assign.py": ("module-attribute", MOD_ATTR.format(t="time.perf_counter", r="time"), 0),
    "heldout_helper_fn.py": ("foreign-attribute", FOREIGN.format(a="perf_counter", e="mod"), 0),
    "heldout_vars.py": ("dynamic-code", DYN.format(n="vars"), 0),
    "heldout_dict.py": ("module-attribute", MOD_ATTR.replace("assigns `{t}`", "assigns an item of `{t}`").format(
        t="time.__dict__", r="time"), 1),
    "heldout_dunder_import.py": ("foreign-attribute", FOREIGN.format(a="perf_counter", e="__import__('time')"), 1),
    "heldout_from_sys.py": ("worker-state", WORKER.format(w="imports `sys.modules`"), 1),
    "heldout_importlib.py": ("introspection", INTRO.format(w="imports `importlib`"), 0),
    "heldout_from_os_fork.py": ("concurrency", CONC.format(w="imports `os.fork`"), 0),
    "heldout_thread_pool.py": ("concurrency", CONC.format(w="imports `concurrent.futures`"), 0),
    "heldout_environ_alias.py": ("environment", ENV.format(w="uses `os.environ` other than to read it"), 0),
    "heldout_getattr_computed.py": ("dynamic-code", DYN.format(n="getattr with a computed name"), 0),
    "heldout_open_fd.py": ("file-descriptor", FD.format(w="opens a file descriptor by number"), 0),
    "heldout_object_setattr.py": ("dunder", DUNDER.format(n="__setattr__"), 0),
    "heldout_jax_alias.py": ("module-attribute", MOD_ATTR.format(t="jax.numpy.allclose", r="jax.numpy"), 0),
    "heldout_sys_path.py": ("worker-state", WORKER.format(
        w="uses `sys.path` other than to read it (a folder added to it brings in modules the gate never read)"), 0),
}


def _evaluate(worker, name, **kw):
    kw.setdefault("timing", FAST)
    task = kw.pop("task", {"form": "infile", "path": task_path("cheats", name)})
    return worker.request("evaluate", task=task, source=read_task("cheats", name),
                          filename=task_path("cheats", name), **kw)


def _expect_refused(r, name, rule, text, more, file_name=None):
    file_name = file_name or name
    line = marker_line(read_task("cheats", file_name), "# cheat")
    assert r["ok"] is False, r
    err = r["error"]
    suffix = f" (and {more} more)" if more else ""
    assert err["kind"] == "refused", err
    assert err["rule"] == rule
    assert err["message"] == f"{file_name}:{line}: the candidate {text} [{rule}]{suffix}"
    assert err["locations"][0]["line"] == line
    assert err["file"] == task_path("cheats", file_name)


@pytest.mark.parametrize("name", sorted(PRIMARY))
def test_cheat_is_refused_with_its_line(worker, name):
    rule, text, more = PRIMARY[name]
    _expect_refused(_evaluate(worker, name), name, rule, text, more)


@pytest.mark.parametrize("name", sorted(HELD_OUT))
def test_held_out_spelling_is_refused(worker, name):
    rule, text, more = HELD_OUT[name]
    _expect_refused(_evaluate(worker, name), name, rule, text, more)


def test_gate_refuses_in_lower_and_autotune_too(worker):
    src, fname = read_task("cheats", "clock_rebind.py"), task_path("cheats", "clock_rebind.py")
    task = {"form": "infile", "path": fname}
    for op, extra in (("lower", {}), ("autotune", {"space": {"BLOCK_UNUSED": [1]}, "seeds": [1]})):
        r = worker.request(op, task=task, source=src, filename=fname, **extra)
        assert r["ok"] is False and r["error"]["kind"] == "refused", (op, r)
        assert r["error"]["rule"] == "module-attribute"


def test_buffer_is_gated_even_when_the_task_file_is_clean(worker):
    # The task is the clean scale_add file; the buffer rebinds the clock.
    src = read_task("infile", "scale_add.py") + "\nimport time\ntime.perf_counter = lambda: 0.0\n"
    r = worker.request("evaluate", task={"form": "infile", "path": task_path("infile", "scale_add.py")},
                       source=src, filename="/tmp/edited_scale_add.py", seeds=[1], timing=False)
    assert r["ok"] is False and r["error"]["kind"] == "refused"
    n = len(src.splitlines())
    assert r["error"]["message"] == (f"edited_scale_add.py:{n}: the candidate "
                                     f"{MOD_ATTR.format(t='time.perf_counter', r='time')} [module-attribute]")


def test_helper_module_beside_the_candidate_is_gated(worker):
    r = _evaluate(worker, "helper_rebinds.py", seeds=[1])
    assert r["ok"] is False and r["error"]["kind"] == "refused"
    line = marker_line(read_task("cheats", "_rebinding_helper.py"), "# cheat")
    assert r["error"]["message"] == (
        f"_rebinding_helper.py:{line}: the helper module `_rebinding_helper` the candidate imports "
        f"{MOD_ATTR.format(t='time.perf_counter', r='time')} [module-attribute]")
    assert r["error"]["file"] == task_path("cheats", "_rebinding_helper.py")


def test_submodule_of_a_package_beside_the_candidate_is_gated(worker):
    r = _evaluate(worker, "package_helper.py", seeds=[1])
    assert r["ok"] is False and r["error"]["kind"] == "refused"
    helper = os.path.join("pkg_helper", "rebind.py")
    line = marker_line(read_task("cheats", helper), "# cheat")
    assert r["error"]["message"] == (
        f"rebind.py:{line}: the helper module `pkg_helper.rebind` the candidate imports "
        f"{MOD_ATTR.format(t='time.perf_counter', r='time')} [module-attribute]")
    assert r["error"]["file"] == task_path("cheats", helper)


def test_candidate_importing_the_task_baseline_is_refused(worker):
    r = worker.request("evaluate", task={"form": "jaxbench", "baseline": task_path("jaxbench", "baseline.py")},
                       source=read_task("cheats", "reads_baseline.py"),
                       filename=task_path("cheats", "reads_baseline.py"), seeds=[1], timing=False)
    _expect_refused(r, "reads_baseline.py", "worker-state", WORKER.format(w="imports `baseline`"), 0)


@pytest.mark.parametrize("name", ["harmless_shadow.py", "harmless_reads.py"])
def test_harmless_look_alikes_pass_and_time_honestly(worker, name):
    r = _evaluate(worker, name, seeds=[1, 2])
    assert r["ok"] is True, r
    assert r["correct"] is True, r["failure"]
    # The shadowed perf_counter returns 0.0; the worker's clock is its own.
    assert r["timing"]["candidate"]["median_s"] > 1e-5
    assert r["timing"]["timed_outputs"] == {"ok": True, "checked": 2}


def test_no_false_positives_on_legitimate_kernels():
    """Every kernel and task the repository tests with passes the gate (the deliberate cheats of
    tasks/cheats/ and the claims task's environment cheat excepted)."""
    paths = (glob.glob(os.path.join(ROOT, "tests", "worker", "tasks", "**", "*.py"), recursive=True) +
             glob.glob(os.path.join(ROOT, "tests", "corpus", "good", "*.py")) +
             glob.glob(os.path.join(ROOT, "tests", "corpus", "bad", "*.py")) +
             glob.glob(os.path.join(ROOT, "examples", "**", "*.py"), recursive=True))
    skip = {os.path.join(ROOT, "tests", "worker", "tasks", "claims", "reference_state_cheat.py")}
    checked = 0
    for p in sorted(paths):
        if os.sep + "cheats" + os.sep in p and not os.path.basename(p).startswith("harmless_"):
            continue
        if p in skip:
            continue
        with open(p, encoding="utf-8") as f:
            found = gate.check_source(f.read(), p)
        assert not found, (p, [v.to_json() for v in found])
        checked += 1
    assert checked >= 60


def test_existing_infile_cheats_pass_the_gate_and_are_caught_later():
    for p in glob.glob(task_path("infile", "cheat_*.py")):
        with open(p, encoding="utf-8") as f:
            assert gate.check_source(f.read(), p) == [], p


# ---------------------------------------------------------------------------
# The whole program's work.

REF_MATMUL = 2 * 64 * 64 * 64


def test_matmul_in_xla_with_a_copy_kernel_is_flagged(worker):
    r = _evaluate(worker, "xla_matmul_copy.py", seeds=[1])
    assert r["ok"] is True and r["correct"] is False
    f = r["failure"]
    assert f["kind"] == "work_outside_kernel" and f["rule"] == "matmul_flops"
    assert f["message"] == ("the work is done outside the kernel: XLA ops outside every pallas_call do 100% of "
                            "the reference's matmul FLOPs (524,288 of 524,288; the kernels do 0%); at most 50% "
                            "may run outside the kernels")
    assert f["locations"][0]["line"] == marker_line(read_task("cheats", "xla_matmul_copy.py"), "# cheat")
    w = r["work"]
    assert w["reference"]["matmul_flops"] == REF_MATMUL
    assert w["candidate"]["outside"]["matmul_flops"] == REF_MATMUL
    assert w["candidate"]["kernels"]["matmul_flops"] == 0
    assert w["share"]["outside_matmul_flops"] == 1.0 and w["share"]["kernels_matmul_flops"] == 0.0
    assert r["timing"] is None and r["speedup"] is None


def test_honest_tiled_matmul_counts_its_work_in_the_kernel(worker):
    r = _evaluate(worker, "xla_matmul_copy.py", kernel="honest", seeds=[1], timing=False)
    assert r["ok"] is True and r["correct"] is True, r.get("failure")
    k = r["work"]["candidate"]["kernels"]
    assert k["matmul_flops"] == REF_MATMUL  # 2x2 grid x 2*32*64*32
    assert k["per_kernel"][0]["grid_steps"] == 4
    assert r["work"]["candidate"]["outside"]["matmul_flops"] == 0
    assert r["work"]["share"]["kernels_matmul_flops"] == 1.0
    assert r["work"]["verdict"] is None


def test_lower_reports_the_whole_program(worker):
    name = "xla_matmul_copy.py"
    r = worker.request("lower", task={"form": "infile", "path": task_path("cheats", name)},
                       source=read_task("cheats", name), filename=task_path("cheats", name))
    assert r["ok"] is True, r
    w = r["work"]
    assert w["verdict"]["kind"] == "work_outside_kernel"
    assert w["verdict"]["message"] in r["warnings"]
    out = w["candidate"]["outside"]
    assert out["matmul_flops"] == REF_MATMUL
    # dot_general's operands and result: three 64x64 f32 arrays, unfused.
    assert out["bytes"] == 3 * 64 * 64 * 4
    assert w["candidate"]["total"]["matmul_flops"] == REF_MATMUL
    assert w["reference"]["min_bytes"] == 3 * 64 * 64 * 4
    assert w["share_limit"] == 0.5


def test_elementwise_in_xla_with_a_copy_kernel_is_flagged(worker):
    r = _evaluate(worker, "xla_elementwise_copy.py", seeds=[1])
    f = r["failure"]
    assert r["correct"] is False and f["kind"] == "work_outside_kernel" and f["rule"] == "flops"
    assert f["message"] == ("the work is done outside the kernel: XLA ops outside every pallas_call do 100% of "
                            "the reference's FLOPs (4,096 of 4,096; the kernels do 0%); at most 50% may run "
                            "outside the kernels")
    assert f["locations"][0]["line"] == marker_line(read_task("cheats", "xla_elementwise_copy.py"), "# cheat")


# ---------------------------------------------------------------------------
# Cached, stale, lazy and aliased results.

def test_results_memoised_on_the_host_are_flagged(worker):
    r = _evaluate(worker, "host_cache.py", seeds=[1, 2])
    f = r["failure"]
    assert r["correct"] is False and f["kind"] == "work_outside_kernel" and f["rule"] == "host_callback"
    assert f["message"] == ("the work is done outside the kernel: host callbacks (pure_callback/io_callback) "
                            "return 8,192 bytes, 100% of the size of the reference's outputs; results computed "
                            "in Python on the host are not the kernel's")


def test_outputs_that_go_stale_while_timed_are_caught(worker):
    """The state that changes the timed outputs lives in a host callback: the judge runs only the
    exported program, which cannot hold one (issue 36), so it is refused before it runs."""
    r = _evaluate(worker, "stale_when_timed.py", seeds=[1, 2])
    assert r["ok"] is False and r["error"]["kind"] == "refused" and r["error"]["rule"] == "host-callback"
    assert r["error"]["message"].startswith("stale_when_timed.py: the candidate's program calls back into Python")


def test_output_written_into_a_donated_input_is_caught(worker):
    r = _evaluate(worker, "alias_donated.py", seeds=[4], timing=False)
    assert r["correct"] is False and r["failure"]["kind"] == "input_mutated"
    assert r["failure"]["message"] == "seed 4: input 0 was donated/deleted by the candidate"


def test_aliasing_without_donation_is_legal(worker):
    r = _evaluate(worker, "alias_donated.py", kernel="aliased_not_donated", seeds=[4])
    assert r["ok"] is True and r["correct"] is True, r.get("failure")


# ---------------------------------------------------------------------------
# Faster than the hardware allows.

SCALE_ADD = {"form": "infile", "path": task_path("infile", "scale_add.py")}


def test_time_below_the_roofline_is_never_a_speedup(worker):
    slow = {"name": "abacus", "peak_flops_per_s": 1.0, "hbm_bandwidth_bytes_per_s": 1.0}
    r = worker.request("evaluate", task=SCALE_ADD, source=read_task("infile", "scale_add.py"),
                       filename=task_path("infile", "scale_add.py"), seeds=[1], timing=FAST, hardware=slow)
    assert r["ok"] is True
    roof = r["roofline"]
    assert roof["bytes"] == 3 * 64 * 128 * 4 and roof["flops"] == 0 and roof["min_s"] == 98304.0
    assert roof["below"] is True
    f = r["failure"]
    assert r["correct"] is False and f["kind"] == "faster_than_hardware" and r["speedup"] is None
    assert f["message"] == (
        f"the measured time {roof['measured_s']:.3g} s is below what abacus allows for this task (9.83e+04 s: "
        f"0 matmul FLOPs at 1 FLOP/s, 98,304 bytes at 1 B/s); the measurement cannot be the kernel's (work "
        f"skipped or results kept from earlier calls?)")


def test_time_above_the_roofline_is_left_alone(worker):
    v5e = {"name": "v5e", "peak_flops_per_s": 1.97e14, "hbm_bandwidth_bytes_per_s": 8.19e11}
    r = worker.request("evaluate", task=SCALE_ADD, source=read_task("infile", "scale_add.py"),
                       filename=task_path("infile", "scale_add.py"), seeds=[1], timing=FAST, target=v5e)
    assert r["ok"] is True and r["correct"] is True, r.get("failure")
    assert r["roofline"]["below"] is False and r["roofline"]["target"] == "v5e"


# ---------------------------------------------------------------------------
# In-process: the bound clock, the run-time integrity check, the profiler trace.

def test_bound_clock_ignores_a_rebound_perf_counter():
    from mkworker.judge import clock
    from mkworker import common

    real = time.perf_counter
    time.perf_counter = lambda: 0.0
    try:
        stats = clock.time_fn(lambda: time.sleep(0.002), [((), {})],
                                  {"warmup": 0, "min_runs": 3, "min_seconds": 0.0, "max_runs": 3,
                                   "max_seconds": 5.0}, common.CancelToken())
    finally:
        time.perf_counter = real
    assert stats["runs"] == 3 and stats["median_s"] >= 0.002


def test_runtime_check_catches_and_restores_rebinding():
    import jax
    from mkworker.judge import clock

    watch = clock.Watch("/x/sneaky.py")
    real_clock, real_block = time.perf_counter, jax.block_until_ready
    array_type = type(jax.numpy.zeros(1))
    real_method = array_type.block_until_ready
    time.perf_counter = lambda: 0.0
    jax.block_until_ready = lambda tree: tree
    array_type.block_until_ready = lambda self: self
    with pytest.raises(Exception) as exc:
        watch.check("timing")
    err = exc.value
    assert err.kind == "refused" and err.extra["rule"] == "runtime-rebinding"
    assert err.message == ("sneaky.py: the candidate changed time.perf_counter, jax.block_until_ready, "
                           "ArrayImpl.block_until_ready while it ran (timing); "
                           "the worker put the originals back [runtime-rebinding]")
    assert time.perf_counter is real_clock and jax.block_until_ready is real_block
    assert array_type.block_until_ready is real_method
    watch.check("after the restore")  # nothing left to report


def test_runtime_check_catches_a_thread_left_running():
    import threading

    from mkworker.judge import clock

    watch = clock.Watch("/x/threads.py")
    stop = threading.Event()
    t = threading.Thread(target=stop.wait, name="sneaky-thread", daemon=True)
    t.start()
    try:
        with pytest.raises(Exception) as exc:
            watch.check("the checks")
        assert exc.value.message == ("threads.py: the candidate left 1 thread(s) running (sneaky-thread) "
                                     "after the checks [runtime-thread]")
    finally:
        stop.set()
        t.join(5)


def _trace(tmp_path, events):
    path = tmp_path / "perfetto_trace.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        json.dump({"traceEvents": events}, f)
    return str(path)


def _meta(pid, tid=None, proc=None, thread=None):
    if proc is not None:
        return {"ph": "M", "name": "process_name", "pid": pid, "args": {"name": proc}}
    return {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": thread}}


def test_device_time_is_read_from_the_profiler_trace(tmp_path):
    from mkworker.judge import clock

    ev = [_meta(1, proc="/host:CPU"), _meta(7, proc="/device:TPU:0 (pid 7)"),
          _meta(7, 1, thread="XLA Ops"), _meta(7, 2, thread="XLA Modules")]
    for i, (start, op_us) in enumerate(((1000.0, (3.0, 5.0)), (2000.0, (4.0, 4.0)), (3000.0, (2.0, 9.0)))):
        ev.append({"ph": "X", "name": f"maxkernel.timed/{i}", "pid": 1, "tid": 9, "ts": start, "dur": 500.0})
        ev.append({"ph": "X", "name": "jit_candidate(12)", "pid": 7, "tid": 2, "ts": start + 10, "dur": 99.0,
                   "args": {"hlo_module": "jit_candidate"}})  # a summary row: never summed
        t = start + 20
        for k, d in enumerate(op_us):
            ev.append({"ph": "X", "name": f"fusion.{k}", "pid": 7, "tid": 1, "ts": t, "dur": d,
                       "args": {"hlo_op": f"fusion.{k}", "hlo_module": "jit_candidate"}})
            t += d
        ev.append({"ph": "X", "name": "copy.1", "pid": 7, "tid": 1, "ts": t, "dur": 50.0,
                   "args": {"hlo_op": "copy.1", "hlo_module": "jit_other"}})  # another program
        ev.append({"ph": "X", "name": "fusion.0", "pid": 1, "tid": 3, "ts": start + 5, "dur": 70.0,
                   "args": {"hlo_op": "fusion.0"}})  # host-side: not a device op
    out = clock.device_run_times(clock.load_trace_events(_trace(tmp_path, ev)), "jit_candidate", 3)
    assert out["clock"] == "profiler" and out["attribution"] == "annotations" and out["events"] == 6
    assert out["run_s"] == [8e-6, 8e-6, 11e-6]
    assert out["median_s"] == pytest.approx(8e-6) and out["min_s"] == pytest.approx(8e-6)


def test_device_time_without_annotations_is_split_evenly_and_cpu_traces_have_none(tmp_path):
    from mkworker.judge import clock

    ev = [_meta(7, proc="/device:GPU:0"), _meta(7, 4, thread="Stream #13(Compute)")]
    for k in range(4):
        ev.append({"ph": "X", "name": "gemm", "pid": 7, "tid": 4, "ts": 10.0 * k, "dur": 6.0,
                   "args": {"hlo_op": "dot.1", "hlo_module": "jit_fn"}})
    out = clock.device_run_times(ev, "jit_fn", 2)
    assert out["attribution"] == "even" and out["run_s"] == [12e-6, 12e-6]
    host_only = [_meta(1, proc="/host:CPU"),
                 {"ph": "X", "name": "fusion", "pid": 1, "tid": 1, "ts": 0, "dur": 5, "args": {"hlo_op": "f"}}]
    assert clock.device_run_times(host_only, None, 1) is None


def test_profiled_timing_path_runs_end_to_end_on_cpu(tmp_path):
    """The real jax.profiler path: three annotated runs land in the trace; a CPU has no device ops."""
    import jax
    from mkworker.judge import clock
    from mkworker.cost import profile

    x = jax.numpy.ones((8, 128), jax.numpy.float32)
    compiled = jax.jit(lambda v: v * 2.0).trace(x).lower().compile()
    module, _ = profile.entry_ops(compiled.as_text())
    clock.profile_runs(compiled, [((x,), {})], 3, str(tmp_path / "trace"))
    trace_file, _ = profile.find_trace_file(str(tmp_path / "trace"))
    events = clock.load_trace_events(trace_file)
    runs = sorted(e["name"] for e in events if e.get("ph") == "X" and
                  str(e.get("name", "")).startswith(clock.TIMED_ANNOTATION + "/"))
    assert runs == ["maxkernel.timed/0", "maxkernel.timed/1", "maxkernel.timed/2"]
    assert module and clock.device_run_times(events, module, 3) is None
