"""Test and Profile lenses and on-save lowering, through the real server and real JAX workers."""
import shutil
from pathlib import Path

import pytest

TASKS = Path(__file__).resolve().parents[1] / "worker" / "tasks" / "infile"


@pytest.fixture
def workspace(tmp_path):
    for name in ("scale_add.py", "bad_block.py", "cheat_zeros.py"):
        shutil.copy(TASKS / name, tmp_path / name)
    return tmp_path


def test_test_lens_reports_a_verdict_with_progress_and_goes_stale_on_edit(server, workspace):
    uri, text = server.open_file(workspace / "scale_add.py")
    resp = server.request("workspace/executeCommand",
                          {"command": "maxkernel.test", "arguments": [{"uri": uri, "kernel": 0}]})
    token = resp["result"]["progressToken"]
    assert resp["result"]["status"] == "started"
    # The server created the progress token with the client before reporting on it.
    assert any(r["method"] == "window/workDoneProgress/create" for r in server.received_server_requests)
    values = server.progress_values(token, 120)
    assert values[0]["kind"] == "begin" and values[0]["cancellable"] is True
    assert "Test passed" in values[-1]["message"]

    diags = server.diagnostics(uri)
    (verdict,) = [d for d in diags if d["code"] == "MK200"]
    assert verdict["severity"] == 3
    assert "interpret time" in verdict["message"] and "not a kernel speedup" in verdict["message"]
    hints = server.request("textDocument/inlayHint", {"textDocument": {"uri": uri}, "range": {
        "start": {"line": 0, "character": 0}, "end": {"line": 200, "character": 0}}})["result"]
    assert any("interpret" in h["label"] for h in hints)

    # Editing the kernel's pallas_call makes the result stale, not current.
    line = next(i for i, l in enumerate(text.splitlines()) if "grid=" in l)
    server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
        {"range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 0}},
         "text": "        # tuning\n"}]})
    assert [d for d in server.diagnostics(uri, version=2) if d["code"] == "MK200"][0]["severity"] == 3  # comment only
    grid_line = line + 1  # shifted by the inserted comment line
    col = text.splitlines()[line].index("BLOCK_ROWS,)") + len("BLOCK_ROWS")
    server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 3}, "contentChanges": [
        {"range": {"start": {"line": grid_line, "character": col},
                   "end": {"line": grid_line, "character": col}}, "text": " // 1"}]})
    stale = [d for d in server.diagnostics(uri, version=3) if d["code"] == "MK200"]
    assert stale and stale[0]["severity"] == 4 and stale[0]["message"].startswith("[stale")



def test_a_cheating_kernel_fails_its_test(server, workspace):
    # scale_add's task with a kernel that writes zeros instead of computing.
    src = (workspace / "scale_add.py").read_text()
    cheat = src.replace("o_ref[...] = 2.0 * x_ref[...] + y_ref[...]", "o_ref[...] = jnp.zeros_like(o_ref)")
    assert cheat != src
    path = workspace / "zeros_with_task.py"
    path.write_text(cheat)

    uri, _ = server.open_file(path)
    resp = server.request("workspace/executeCommand",
                          {"command": "maxkernel.test", "arguments": [{"uri": uri, "kernel": 0}]})
    server.progress_values(resp["result"]["progressToken"], 120)
    (verdict,) = [d for d in server.diagnostics(uri) if d["code"] == "MK200"]
    assert verdict["severity"] == 1 and "Test failed" in verdict["message"]


def test_cancelling_the_progress_cancels_the_run(server, workspace):
    uri, _ = server.open_file(workspace / "scale_add.py")
    resp = server.request("workspace/executeCommand",
                          {"command": "maxkernel.profile", "arguments": [{"uri": uri, "kernel": 0}]})
    token = resp["result"]["progressToken"]
    server.notify("window/workDoneProgress/cancel", {"token": token})
    values = server.progress_values(token, 120)
    # Stopped, not finished: the outcome says the profile did not run and why, no job is left
    # running, and no profile summary was made up from a partial run.
    end = values[-1]["message"]
    assert end.startswith("Profile did not run on local: ") and "cancel" in end.lower(), end
    (outcome,) = [d for d in server.diagnostics(uri) if d["code"] == "MK201"]
    assert outcome["message"].startswith("Profile did not run on local: "), outcome["message"]
    assert server.request("maxkernel/status")["result"]["runningJobs"]["kernel"] == 0


def test_save_lowers_for_tpu_and_maps_the_error_to_its_line(server, workspace):
    path = workspace / "bad_block.py"
    uri, text = server.open_file(path)
    server.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    diags = server.wait_notification(
        "textDocument/publishDiagnostics",
        lambda p: p["uri"] == uri and any(d["code"] == "MK100" for d in p["diagnostics"]), timeout=120)["diagnostics"]
    (lowering,) = [d for d in diags if d["code"] == "MK100"]
    # The error names args[0]: it goes on that operand's in_specs entry, the kernel's lines related.
    lines = text.splitlines()
    expected = next(i for i, l in enumerate(lines) if "in_specs=[spec, spec]" in l)
    assert lowering["range"]["start"]["line"] == expected
    assert "divisible by 8 and 128" in lowering["message"]
    related = [r["location"]["range"]["start"]["line"] for r in lowering["relatedInformation"]]
    assert related == [next(i for i, l in enumerate(lines) if l.startswith("def _kernel(")),
                       next(i for i, l in enumerate(lines) if "PALLAS_CALL_LINE" in l)]


# in_specs[0] is legal (the whole 12-row array), in_specs[1] is not (12 of 48 rows).
SECOND_INPUT_BAD = '''import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def reference(x, y):
    return jnp.tile(x, (4, 1)) + y


def make_inputs(key):
    kx, ky = jax.random.split(key)
    return (jax.random.normal(kx, (12, 128), jnp.float32),
            jax.random.normal(ky, (48, 128), jnp.float32))


def _kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


def candidate(x, y):
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct(y.shape, y.dtype),
        grid=(4,),
        in_specs=[pl.BlockSpec((12, 128), lambda i: (0, 0)),
                  pl.BlockSpec((12, 128), lambda i: (i, 0))],  # SECOND_SPEC
        out_specs=pl.BlockSpec((12, 128), lambda i: (i, 0)),
    )(x, y)
'''


def test_save_puts_an_error_naming_in_specs_1_on_that_entry(server, tmp_path):
    path = tmp_path / "second_bad.py"
    path.write_text(SECOND_INPUT_BAD)
    uri, text = server.open_file(path)
    server.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    diags = server.wait_notification(
        "textDocument/publishDiagnostics",
        lambda p: p["uri"] == uri and any(d["code"] == "MK100" for d in p["diagnostics"]), timeout=120)["diagnostics"]
    (lowering,) = [d for d in diags if d["code"] == "MK100"]
    assert "args[1]" in lowering["message"], lowering["message"]
    lines = text.splitlines()
    entry = next(i for i, l in enumerate(lines) if "SECOND_SPEC" in l)
    assert lowering["range"]["start"]["line"] == entry
    assert lines[entry][lowering["range"]["start"]["character"]:].startswith("pl.BlockSpec((12, 128), lambda i: (i, 0))")
    related = [r["location"]["range"]["start"]["line"] for r in lowering["relatedInformation"]]
    assert next(i for i, l in enumerate(lines) if l.startswith("def _kernel(")) in related


def test_test_without_a_task_says_why(server, tmp_path):
    path = tmp_path / "lonely.py"
    path.write_text((Path(__file__).resolve().parents[2] / "examples" / "softmax_rows.py").read_text())
    uri, _ = server.open_file(path)
    resp = server.request("workspace/executeCommand",
                          {"command": "maxkernel.test", "arguments": [{"uri": uri, "kernel": 0}]})
    assert resp["error"]["code"] == -32803
    assert "make_inputs" in resp["error"]["message"]


def test_save_adds_exact_facts_and_a_labelled_prediction_to_the_hover(server, workspace):
    path = workspace / "scale_add.py"
    uri, text = server.open_file(path)
    server.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    # Re-published once the lowering has come back: a worker starts and lowers for TPU first,
    # which on a loaded 2-core machine under ASan takes well over 10 s.
    server.diagnostics(uri, timeout=120)
    line = next(i for i, l in enumerate(text.splitlines()) if "PALLAS_CALL_LINE" in l)
    hover = server.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                  "position": {"line": line, "character": 14}})["result"]
    value = hover["contents"]["value"]
    assert "Lowered for TPU" in value
    assert "`[4]`" in value and "[16,128]" in value  # exact grid and blocks from the jaxpr
    assert "predicted (model, v5e)" in value and "-bound" in value
