"""Issue 16 in the editor: the Test lens (workspace/executeCommand maxkernel.test) on a candidate
that fakes its measurement, through the real maxkernel-lsp and real JAX workers, ends in an
error-severity MK200 verdict on the kernel's pallas_call carrying the worker's exact refusal or
work_outside_kernel message; saving a refused file puts the refusal on the cheat's own line
(MK100, the on-save lowering is gated too). The cheats are the worker suite's files
(tests/worker/tasks/cheats/, the verdict's line marked `# cheat`); `maxkernel test` and a search
on the same classes are tests/optimize/test_cheats_front_ends.py."""
import shutil
from pathlib import Path

import pytest

CHEATS = Path(__file__).resolve().parents[1] / "worker" / "tasks" / "cheats"
ERROR = 1

REFUSED = {
    "clock_rebind.py": ("module-attribute",
                        ("assigns `time.perf_counter`, an attribute of the imported `time`: a candidate may not "
                         "change what it imports (the worker's clock and checks use the same modules)")),
    "thread_start.py": ("concurrency",
                        "imports `threading`: a candidate may not start threads or processes, or signal them"),
}
OUTSIDE = {
    "xla_matmul_copy.py": ("the work is done outside the kernel: XLA ops outside every pallas_call do 100% of "
                           "the reference's matmul FLOPs (524,288 of 524,288; the kernels do 0%); at most 50% "
                           "may run outside the kernels"),
    "host_cache.py": ("the work is done outside the kernel: host callbacks (pure_callback/io_callback) return "
                      "8,192 bytes, 100% of the size of the reference's outputs; results computed in Python on "
                      "the host are not the kernel's"),
}


def open_cheat(c, tmp_path, name):
    path = tmp_path / name
    shutil.copy(CHEATS / name, path)
    text = path.read_text()
    c.open(path.as_uri(), text)
    c.diagnostics(path.as_uri(), version=1)
    (line,) = [i for i, l in enumerate(text.splitlines(), start=1) if "# cheat" in l]
    return path.as_uri(), text, line


def run_test_lens(c, uri):
    resp = c.request("workspace/executeCommand",
                     {"command": "maxkernel.test", "arguments": [{"uri": uri, "kernel": 0}]})
    assert resp["result"]["status"] == "started", resp
    token = resp["result"]["progressToken"]
    while True:
        p = c.wait_notification("$/progress", lambda p: p["token"] == token, timeout=240)
        if p["value"]["kind"] == "end":
            end = p["value"].get("message", "")
            break
    (verdict,) = [d for d in c.diagnostics(uri) if d["code"] == "MK200"]
    return verdict, end


def pallas_call_line(text):
    """0-based line of the candidate's pallas_call: the verdict's range starts there."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("def candidate("))
    return next(i for i in range(start, len(lines)) if "pl.pallas_call(" in lines[i])


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_test_lens_shows_the_gate_refusal_with_its_line(server, tmp_path, name):
    rule, what = REFUSED[name]
    uri, text, line = open_cheat(server, tmp_path, name)
    message = f"{name}:{line}: the candidate {what} [{rule}]"

    verdict, end = run_test_lens(server, uri)
    assert verdict["severity"] == ERROR
    assert verdict["message"] == f"Test could not run (refused): {message}"
    assert verdict["source"] == "maxkernel (test)"
    assert verdict["range"]["start"]["line"] == pallas_call_line(text)
    assert end.startswith("Test could not run (refused): ")

    # Saving lowers the file for TPU; the gate refuses that too, and the editor puts the
    # refusal on the cheat's own line.
    server.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    diags = server.wait_notification(
        "textDocument/publishDiagnostics",
        lambda p: p["uri"] == uri and any(d["code"] == "MK100" for d in p["diagnostics"]),
        timeout=120)["diagnostics"]
    (lowering,) = [d for d in diags if d["code"] == "MK100"]
    assert lowering["severity"] == ERROR
    assert lowering["range"]["start"]["line"] == line - 1
    assert lowering["message"] == f"lowering for TPU failed (refused): {message}"


@pytest.mark.parametrize("name", sorted(OUTSIDE))
def test_test_lens_flags_work_done_outside_the_kernel(server, tmp_path, name):
    uri, text, line = open_cheat(server, tmp_path, name)
    verdict, end = run_test_lens(server, uri)
    assert verdict["severity"] == ERROR
    assert verdict["message"] == f"Test failed on local (work_outside_kernel): {OUTSIDE[name]}"
    assert verdict["range"]["start"]["line"] == pallas_call_line(text)
    # The line the work verdict names (the XLA matmul; a host callback names none) comes along
    # as related information, the same location `maxkernel test` prints.
    related = verdict.get("relatedInformation", [])
    if name == "xla_matmul_copy.py":
        assert [(r["location"]["uri"], r["location"]["range"]["start"]["line"], r["message"])
                for r in related] == [(uri, line - 1, OUTSIDE[name])]
    else:
        assert related == []
    assert "interpret" not in verdict["message"] and "median" not in verdict["message"]  # never timed
    assert end.startswith("Test failed on local (work_outside_kernel): ")
    hints = server.request("textDocument/inlayHint", {"textDocument": {"uri": uri}, "range": {
        "start": {"line": 0, "character": 0}, "end": {"line": 200, "character": 0}}})["result"]
    assert any("wrong (work_outside_kernel)" in h["label"] for h in hints), hints
