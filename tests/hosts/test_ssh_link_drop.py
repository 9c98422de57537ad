"""The ssh link to a kernel host drops while a job runs there: a real sshd on loopback whose
per-connection processes are killed (SIGKILL, as a network drop or a host-side sshd restart
leaves it) while the worker on the "remote" side is evaluating. Through the real language
server: that Test fails with a "connection lost" reason (no retry: an evaluation is not
repeated behind the user's back), no worker is left on the host side, and the next Test on the
same server and host connects afresh and passes."""
import os
import signal
from pathlib import Path

import pytest
from conftest import (
    TASKS,
    descendants,
    pids_with_cmdline,
    venv_python,
    wait_until,
)
from lsp_client import LspClient


def sshd_connection_processes(sshd):
    """The listener's per-connection children ("sshd: user [priv]", "sshd: user@notty")."""
    out = []
    for pid in descendants(sshd.proc.pid):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"sshd:"):
                out.append(pid)
        except OSError:
            pass
    return out


def run_test(c, uri, timeout=240):
    started = c.request("workspace/executeCommand",
                        {"command": "maxkernel.test", "arguments": [{"uri": uri, "kernel": 0}]},
                        timeout=30)["result"]
    assert started["status"] == "started", started
    return started["progressToken"]


def wait_end(c, token, timeout=240):
    while True:
        p = c.wait_notification("$/progress", lambda p: p["token"] == token, timeout=timeout)
        if p["value"]["kind"] == "end":
            return p["value"].get("message", "")


def test_a_dropped_link_fails_the_job_clearly_and_the_next_job_reconnects(fresh_sshd, tmp_path,
                                                                          worker_copy, monkeypatch):
    python = venv_python()
    if not os.access(python, os.X_OK):
        pytest.skip(f"no python with JAX at {python}")
    remote = tmp_path / "remote"
    started_marker = tmp_path / "evaluating"
    hang = tmp_path / "hang.py"
    text = (TASKS / "scale_add.py").read_text()
    marker = "def candidate(x, y):\n"
    assert marker in text
    hang.write_text(text.replace(marker, marker + f"    import os\n    os.mkdir({str(started_marker)!r})\n"
                                 "    import time\n    time.sleep(600)\n", 1))
    good = tmp_path / "scale_add.py"
    good.write_text(text)
    monkeypatch.setenv("MAXKERNEL_STORE", str(tmp_path / "store.sqlite"))
    monkeypatch.setenv("MAXKERNEL_WORKER_DIR", str(worker_copy))
    host = fresh_sshd.host("tpu-ssh", remote)
    c = LspClient()
    try:
        c.initialize(options={"host": "tpu-ssh", "hosts": [host], "python": python})
        for path in (hang, good):
            c.open(path.as_uri(), path.read_text())
            c.diagnostics(path.as_uri(), version=1)

        token = run_test(c, hang.as_uri())
        assert wait_until(started_marker.exists, 180, interval=0.1), "the evaluation never began"
        assert pids_with_cmdline(str(remote)), "no worker on the host side"
        connections = sshd_connection_processes(fresh_sshd)
        assert connections, "no sshd connection process"
        for pid in connections:
            os.kill(pid, signal.SIGKILL)
        failed = wait_end(c, token, timeout=60)
        assert "connection lost" in failed, failed

        # Nothing is left running on the host side: the worker saw its input close and exited.
        gone = wait_until(lambda: not pids_with_cmdline(str(remote)), 20, interval=0.2)
        assert gone, f"left behind on the host: {pids_with_cmdline(str(remote))}"

        # The link is back (sshd still listens): the next job connects afresh and passes.
        passed = wait_end(c, run_test(c, good.as_uri()))
        log = "".join(c.stderr_lines[-60:])
        assert "Test passed" in passed, f"{passed}\nthe server's log:\n{log}"
        assert c.shutdown_and_exit(timeout=60) == 0
    finally:
        c.close()
        fresh_sshd.close_master()
    gone = wait_until(lambda: not pids_with_cmdline(str(remote)), 20, interval=0.2)
    assert gone, f"left behind on the host: {pids_with_cmdline(str(remote))}"
