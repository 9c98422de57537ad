"""Protocol-level behaviour: hello, malformed input, unknown ops, cancel,
shutdown, stdout hygiene."""

import os
import subprocess
import sys

from worker_harness import WORKER, WorkerProcess, read_task, task_path


def test_hello_reports_versions_and_platform(worker):
    r = worker.request("hello", protocol_version=1)
    assert r["ok"] is True
    assert r["protocol_version"] == 1
    assert r["jax"] and r["jaxlib"] and r["python"].startswith("3.")
    assert r["platform"] == "cpu"
    assert r["device_count"] >= 1
    assert r["tpu_generation"] is None
    assert r["interpret"] is True
    assert {"lower", "evaluate", "profile", "autotune", "cancel", "shutdown"} <= set(r["ops"])
    assert "file_size_bytes" in r["limits"]


def test_hello_rejects_other_protocol_version(worker):
    r = worker.request("hello", protocol_version=99)
    assert r["ok"] is False
    assert r["error"]["kind"] == "protocol"
    assert r["error"]["supported_versions"] == [1]


def test_malformed_json_then_next_request_still_answered(worker):
    worker.send_raw(b"{this is not json\n")
    bad = worker.next_message(timeout=60)
    assert bad["id"] is None and bad["ok"] is False
    assert bad["error"]["kind"] == "protocol"
    worker.send_raw(b"[1, 2, 3]\n")
    bad2 = worker.next_message(timeout=60)
    assert bad2["id"] is None and bad2["error"]["kind"] == "protocol"
    r = worker.request("hello")
    assert r["ok"] is True


def test_request_without_op_and_unknown_op(worker):
    worker.send_raw(b'{"id": "x1"}\n')
    r = worker.wait_for("x1", timeout=60)
    assert r["ok"] is False and r["error"]["kind"] == "protocol"
    r = worker.request("frobnicate")
    assert r["ok"] is False and r["error"]["kind"] == "unknown_op"


def test_user_prints_never_reach_stdout(worker):
    src = "print('hello from user code')\nimport os\nos.write(1, b'raw fd write\\n')\n" + \
        read_task("infile", "scale_add.py")
    r = worker.request("lower", source=src, filename=task_path("infile", "scale_add.py"),
                       task={"form": "infile"})
    assert r["ok"] is True, r
    # Every line the worker wrote is JSON (the harness would have flagged others).
    assert all(line.lstrip().startswith(b"{") for line in worker.raw_lines)


def test_cancel_unknown_target(worker):
    r = worker.request("cancel", target_id=424242)
    assert r["ok"] is True and r["state"] == "unknown" and r["cancelled"] is False


def test_cancel_long_autotune(fresh_worker):
    w = fresh_worker
    space = {"block_rows": [8, 16, 32, 64, 8, 16, 32, 64]}
    rid = w.send("autotune", task={"form": "jaxbench", "baseline": task_path("jaxbench", "baseline.py")},
                 source=read_task("jaxbench", "candidate.py"),
                 filename=task_path("jaxbench", "candidate.py"), space=space, seeds=[1],
                 timing={"min_runs": 50, "min_seconds": 2.0, "max_seconds": 5.0})
    # Wait until at least one configuration finished, then cancel.
    w.wait_event(rid, lambda m: m.get("done", 0) >= 1, timeout=120)
    c = w.request("cancel", target_id=rid, timeout=30)
    assert c["ok"] is True and c["state"] == "running"
    r = w.wait_for(rid, timeout=60)
    assert r["ok"] is False
    assert r["error"]["kind"] == "cancelled"
    assert 1 <= r["error"]["completed"] < r["error"]["total"] == len(space["block_rows"])
    assert len(r["error"]["results"]) == r["error"]["completed"]
    # Still serving afterwards.
    assert w.request("hello")["ok"] is True


def test_shutdown_exits_zero(fresh_worker):
    w = fresh_worker
    r = w.request("shutdown", timeout=60)
    assert r["ok"] is True and r["shutting_down"] is True
    assert w.proc.wait(timeout=30) == 0


def test_stdin_eof_exits_zero():
    w = WorkerProcess()
    try:
        w.proc.stdin.close()
        assert w.proc.wait(timeout=60) == 0
    finally:
        w.close()


def test_runs_as_module_from_its_directory():
    import os
    wdir = os.path.dirname(WORKER)
    p = subprocess.run([sys.executable, "-m", "maxkernel_worker"], cwd=wdir,
                       input=b'{"id": 1, "op": "shutdown"}\n', capture_output=True, timeout=120, check=False)
    assert p.returncode == 0, p.stderr.decode()
    assert b'"shutting_down":true' in p.stdout


def test_limits_from_hello_and_env():
    w = WorkerProcess(extra_env={"MAXKERNEL_WORKER_LIMITS": '{"open_files": 4096}'})
    try:
        r = w.request("hello", limits={"file_size_mb": 512, "bogus": 1}, timeout=120)
        assert r["ok"] is True
        assert r["limits"]["file_size_bytes"] == 512 << 20
        assert r["limits"]["open_files"] == 4096
        assert any("bogus" in e for e in r["limit_errors"])
    finally:
        w.close()


def test_user_code_runs_in_private_workdir(worker):
    hello = worker.request("hello")
    src = "import os\nraise RuntimeError('CWD=' + os.getcwd())\n"
    r = worker.request("lower", source=src, filename="/tmp/cwd_probe.py", task={"form": "infile"})
    assert r["ok"] is False and r["error"]["kind"] == "import"
    assert "maxkernel-worker-" in hello["workdir"]
    # The candidate's child runs in a folder of its own, not the worker's, removed after it.
    cwd = r["error"]["message"].split("CWD=", 1)[1].split()[0]
    assert os.path.basename(cwd).startswith("maxkernel-candidate-") and cwd != hello["workdir"], cwd
    assert not os.path.exists(cwd)


def test_a_compile_worker_keeps_jax_on_the_cpu_whatever_the_environment_asks():
    # A TPU admits one process: a compile worker must never take the device (here a TPU this
    # machine lacks, so a worker that looked for it could not start at all).
    tpu_env = {"JAX_PLATFORMS": "tpu"}
    compile_worker = WorkerProcess(extra_env=tpu_env, args=[sys.executable, WORKER, "--lane", "compile"])
    try:
        r = compile_worker.request("hello", timeout=120)
        assert r["ok"] is True, r
        assert r["lane"] == "compile" and r["platform"] == "cpu"
        lowered = compile_worker.request("lower", source=read_task("infile", "scale_add.py"),
                                         filename=task_path("infile", "scale_add.py"),
                                         task={"form": "infile"}, target="tpu", timeout=120)
        assert lowered["ok"] is True, lowered
    finally:
        compile_worker.close()
    timing_worker = WorkerProcess(extra_env=tpu_env, args=[sys.executable, WORKER, "--lane", "timing"])
    try:
        r = timing_worker.request("hello", timeout=120)
        assert r["ok"] is False and "tpu" in r["error"]["message"], r
    finally:
        timing_worker.close()


def test_an_unknown_lane_is_logged_and_the_worker_still_serves():
    w = WorkerProcess(args=[sys.executable, WORKER, "--lane", "fast"])
    try:
        r = w.request("hello", timeout=120)
        assert r["ok"] is True and r["lane"] is None
        assert "--lane needs one of compile, timing" in w.stderr_text()
    finally:
        w.close()
