"""A worker that writes one line over 64 MiB on its protocol stream (or an endless line with no
newline) in answer to an evaluation, seen through the real language server: that Test fails
with a "garbage output" reason, the server's memory stays bounded (its reader never buffers
more than the 64 MiB cap), the worker is killed and replaced, and the next Test on the same
server passes. The worker is the real one behind fake_workers/overlong_proxy.py on a command
host; the proxy misbehaves once (a marker file), then passes everything through."""
import os
from pathlib import Path

import pytest
from conftest import TASKS, pids_with_cmdline, venv_python, wait_until
from lsp_client import LspClient

PROXY = Path(__file__).resolve().parent / "fake_workers" / "overlong_proxy.py"
# The reader holds at most the 64 MiB cap plus a chunk; its string's growth can briefly need
# twice that. A reader without a bound reaches the gigabytes an endless line brings.
MAX_SERVER_PEAK_RSS_MIB = 400


def peak_rss_mib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmHWM for {pid}")


def run_test(c, uri):
    started = c.request("workspace/executeCommand",
                        {"command": "maxkernel.test", "arguments": [{"uri": uri, "kernel": 0}]},
                        timeout=30)["result"]
    assert started["status"] == "started", started
    while True:
        p = c.wait_notification("$/progress", lambda p: p["token"] == started["progressToken"],
                                timeout=240)
        if p["value"]["kind"] == "end":
            return p["value"].get("message", "")


@pytest.mark.parametrize("mode", ["over64", "endless"])
def test_an_overlong_reply_line_fails_the_job_and_the_next_one_works(mode, tmp_path, worker_copy,
                                                                     monkeypatch):
    python = venv_python()
    if not os.access(python, os.X_OK):
        pytest.skip(f"no python with JAX at {python}")
    marker = tmp_path / f"misbehaved-{mode}"
    task = tmp_path / "scale_add.py"
    task.write_text((TASKS / "scale_add.py").read_text())
    monkeypatch.setenv("MAXKERNEL_STORE", str(tmp_path / "store.sqlite"))
    monkeypatch.setenv("MAXKERNEL_WORKER_DIR", str(worker_copy))
    host = {"name": "flaky", "kind": "command",
            "command": [python, str(PROXY), mode, str(marker), "{command}"],
            "remoteDir": str(tmp_path / "remote"), "python": python}
    c = LspClient()
    try:
        c.initialize(options={"host": "flaky", "hosts": [host], "python": python})
        uri = task.as_uri()
        c.open(uri, task.read_text())
        c.diagnostics(uri, version=1)

        failed = run_test(c, uri)
        assert marker.exists(), "the proxy never saw an evaluate request"
        assert "wrote garbage output: a line over 64 MiB" in failed, failed
        # The diagnostic carries the whole reason, with the start of the line.
        shown = c.wait_notification(
            "textDocument/publishDiagnostics",
            lambda p: p["uri"] == uri and any("garbage output" in d["message"]
                                              for d in p["diagnostics"]))
        (reason,) = [d["message"] for d in shown["diagnostics"] if "garbage" in d["message"]]
        assert "is not a protocol message (it starts: xxxxxxxx" in reason, reason
        peak = peak_rss_mib(c.proc.pid)
        print(f"{mode}: server peak RSS {peak:.0f} MiB")
        assert peak < MAX_SERVER_PEAK_RSS_MIB, f"server peak RSS {peak:.0f} MiB"

        passed = run_test(c, uri)  # a fresh worker behind a proxy that now passes everything
        assert "Test passed" in passed, passed
        assert c.shutdown_and_exit(timeout=60) == 0
    finally:
        c.close()
    left = wait_until(lambda: not pids_with_cmdline(str(marker)), 15)
    assert left, f"worker processes left: {pids_with_cmdline(str(marker))}"
