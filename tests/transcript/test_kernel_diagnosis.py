"""What limits a kernel, in the editor after a Profile run: through the real server and a real JAX
worker, a matmul whose `b` block ignores the row axis shows "HBM-bound · N% of roofline" as an
inlay hint at its pallas_call, and the full summary in the hover (the re-fetched operand and the
grid axis it is re-read along, HBM bytes against the task's minimum, VMEM headroom, the roofline
against the labelled prediction); both go stale once the pallas_call changes."""
import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KERNEL = ROOT / "tests" / "optimize" / "kernels" / "matmul_refetch.py"
PROFILE_TIMEOUT = 300  # a profile plus one lowering on a busy 2-core machine
LABEL = re.compile(r" HBM-bound \u00b7 (\d+)% of roofline( \(stale\))?")


def diagnosis_hints(server, uri):
    hints = server.request("textDocument/inlayHint", {"textDocument": {"uri": uri}, "range": {
        "start": {"line": 0, "character": 0}, "end": {"line": 200, "character": 0}}})["result"]
    return [h for h in hints if LABEL.fullmatch(h["label"])]


def hover_at(server, uri, line):
    return server.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                 "position": {"line": line, "character": 20}})["result"]


def test_a_profile_shows_the_diagnosis_as_a_hint_and_in_the_hover_until_the_kernel_changes(
        server, tmp_path):
    path = tmp_path / "matmul_refetch.py"
    shutil.copy(KERNEL, path)
    uri, text = server.open_file(path)
    lines = text.splitlines()
    call_line = next(i for i, l in enumerate(lines) if "pl.pallas_call(" in l)
    assert diagnosis_hints(server, uri) == []
    assert "Diagnosis" not in hover_at(server, uri, call_line)["contents"]["value"]

    resp = server.request("workspace/executeCommand",
                          {"command": "maxkernel.profile", "arguments": [{"uri": uri, "kernel": 0}]})
    values = server.progress_values(resp["result"]["progressToken"], PROFILE_TIMEOUT)
    assert any(v.get("message") == "diagnosing" for v in values), values
    assert values[-1]["message"].startswith("Profile on local"), values[-1]

    (hint,) = diagnosis_hints(server, uri)
    percent = int(LABEL.fullmatch(hint["label"]).group(1))
    assert 0 < percent < 100
    # At the kernel's pallas_call, beside the profile's own hint.
    assert call_line <= hint["position"]["line"] < call_line + 12
    tooltip = hint["tooltip"]
    assert "re-fetched: args[1] of _matmul 8x along grid axis 0" in tooltip, tooltip
    assert re.search(r"HBM traffic: [\d.]+ MiB, [\d.]+x the task's minimum of [\d.]+ MiB", tooltip), tooltip
    assert re.search(r"VMEM: [\d.]+ MiB per grid step of 16 MiB: [\d.]+ MiB headroom", tooltip), tooltip
    assert f"{percent}% of the roofline" in tooltip and "predicted (model, v5e)" in tooltip, tooltip

    value = hover_at(server, uri, call_line)["contents"]["value"]
    assert f"**Diagnosis: HBM-bound \u00b7 {percent}% of roofline** (Profile on local)" in value, value
    assert "- re-fetched: args[1] of \\_matmul 8x along grid axis 0" in value, value
    assert "- HBM-bound: the model puts compute at " in value, value
    assert "stale" not in value

    # A comment inside the call is not a change of the kernel; a changed grid is.
    grid_line = next(i for i, l in enumerate(lines) if "grid=(m // BLOCK_M, n // BLOCK_N)" in l)
    server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
        {"range": {"start": {"line": grid_line, "character": 0}, "end": {"line": grid_line, "character": 0}},
         "text": "        # tuning\n"}]})
    server.diagnostics(uri, version=2)
    (same,) = diagnosis_hints(server, uri)
    assert same["label"] == hint["label"]
    grid_line += 1
    col = lines[grid_line - 1].index("BLOCK_N)") + len("BLOCK_N")
    server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 3}, "contentChanges": [
        {"range": {"start": {"line": grid_line, "character": col}, "end": {"line": grid_line, "character": col}},
         "text": " // 1"}]})
    server.diagnostics(uri, version=3)
    (stale,) = diagnosis_hints(server, uri)
    assert stale["label"] == hint["label"] + " (stale)"
    assert stale["tooltip"].startswith("[stale: the kernel changed since] ")
    value = hover_at(server, uri, call_line)["contents"]["value"]
    assert "(Profile on local; stale: the kernel changed since)" in value, value
