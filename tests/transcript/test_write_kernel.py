"""'Write a Pallas kernel for this': the code action on a plain JAX reference, through the real
server and a real JAX worker. The kernel arrives as a versioned, annotated workspace edit that only
inserts (the user's text is kept byte for byte), and once applied the file has a kernel the server
analyses; a reference no template covers gets a clear message and no edit."""
from pathlib import Path

from lsp_client import LspClient

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv" / "bin" / "python"
TIMEOUT = 180  # tracing, generating and lowering for TPU on a busy two-core machine

SCALE_BIAS = '''import jax
import jax.numpy as jnp

ROWS, COLS = 256, 512


def reference(x, b):
    return jnp.tanh(x * 2.0 + b)


def make_inputs(key):
    kx, kb = jax.random.split(key)
    return (jax.random.normal(kx, (ROWS, COLS), jnp.float32),
            jax.random.normal(kb, (1, COLS), jnp.float32))
'''

CONV = '''import jax
import jax.numpy as jnp


def reference(x, w):
    # a dilated kernel window: no template covers it
    return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", rhs_dilation=(2, 2))


def make_inputs(key):
    kx, kw = jax.random.split(key)
    return (jax.random.normal(kx, (1, 8, 32, 32), jnp.float32),
            jax.random.normal(kw, (8, 8, 3, 3), jnp.float32))
'''


def start(edits):
    def apply(params):
        edits.append(params)
        return {"applied": True}

    c = LspClient(server_requests={"workspace/applyEdit": apply})
    c.initialize(options={"python": str(PYTHON)})
    return c


def open_file(c, path, text):
    path.write_text(text)
    c.open(path.as_uri(), text)
    c.diagnostics(path.as_uri(), version=1)
    return path.as_uri()


def actions(c, uri, line):
    pos = {"line": line, "character": 0}
    return c.request("textDocument/codeAction",
                     {"textDocument": {"uri": uri}, "range": {"start": pos, "end": pos},
                      "context": {"diagnostics": []}})["result"]


def apply_inserts(text, edits):
    """Applies insert-only TextEdits (ASCII: UTF-16 columns are bytes), last position first."""
    lines = text.splitlines(keepends=True)

    def offset(pos):
        return sum(len(line) for line in lines[:pos["line"]]) + pos["character"]

    for e in sorted(edits, key=lambda e: offset(e["range"]["start"]), reverse=True):
        at = offset(e["range"]["start"])
        assert offset(e["range"]["end"]) == at, "the kernel edit must only insert"
        text = text[:at] + e["newText"] + text[at:]
    return text


def test_the_kernel_arrives_as_a_reviewable_insert_beside_the_reference(tmp_path):
    edits = []
    c = start(edits)
    try:
        uri = open_file(c, tmp_path / "scale_bias.py", SCALE_BIAS)
        found = actions(c, uri, 6)
        write = [a for a in found if a["title"] == "Write a Pallas kernel for this"]
        assert len(write) == 1, found
        command = write[0]["command"]
        started = c.request("workspace/executeCommand",
                            {"command": command["command"], "arguments": command["arguments"]})["result"]
        assert started["status"] == "started", started
        c.wait_for(lambda m: edits, timeout=TIMEOUT, what="workspace/applyEdit")
        edit = edits[0]["edit"]
        change = edit["documentChanges"][0]
        assert change["textDocument"] == {"uri": uri, "version": 1}
        annotation = next(iter(edit["changeAnnotations"].values()))
        assert annotation["needsConfirmation"] is True
        assert "elementwise" in annotation["label"]
        new_text = apply_inserts(SCALE_BIAS, change["edits"])
        # Every line the user wrote is still there, in order; the kernel comes after reference.
        kept = iter(new_text.splitlines())
        assert all(line in kept for line in SCALE_BIAS.splitlines())
        assert new_text.index("def reference(") < new_text.index("pallas_call(")
        assert "from jax.experimental import pallas as pl" in new_text
        assert "def candidate(" in new_text
        # The editor applied it: the file now has a kernel, and the action is gone.
        c.notify("textDocument/didChange",
                 {"textDocument": {"uri": uri, "version": 2},
                  "contentChanges": [{"text": new_text}]})
        lenses = c.request("textDocument/codeLens", {"textDocument": {"uri": uri}})["result"]
        assert any(lens["command"]["command"] == "maxkernel.test" for lens in lenses), lenses
        assert not [a for a in actions(c, uri, 6) if a["title"].startswith("Write a Pallas")]
    finally:
        c.close()


def test_a_reference_no_template_covers_gets_a_message_and_no_edit(tmp_path):
    edits = []
    c = start(edits)
    try:
        uri = open_file(c, tmp_path / "conv.py", CONV)
        write = [a for a in actions(c, uri, 4) if a["title"] == "Write a Pallas kernel for this"]
        assert write, "a reference with a task is offered the action even if no template fits"
        command = write[0]["command"]
        c.request("workspace/executeCommand",
                  {"command": command["command"], "arguments": command["arguments"]})
        shown = c.wait_notification("window/showMessage",
                                    lambda p: "no kernel written" in p["message"], timeout=TIMEOUT)
        assert shown["type"] == 2
        assert "conv_general_dilated" in shown["message"]
        assert "LLM" in shown["message"]
        assert not edits
    finally:
        c.close()


def test_a_document_edited_while_the_kernel_is_written_is_left_alone(tmp_path):
    edits = []
    c = start(edits)
    try:
        uri = open_file(c, tmp_path / "scale_bias.py", SCALE_BIAS)
        command = next(a for a in actions(c, uri, 6)
                   if a["title"] == "Write a Pallas kernel for this")["command"]
        c.request("workspace/executeCommand",
                  {"command": command["command"], "arguments": command["arguments"]})
        c.notify("textDocument/didChange",
                 {"textDocument": {"uri": uri, "version": 2},
                  "contentChanges": [{"text": SCALE_BIAS + "\n# edited\n"}]})
        shown = c.wait_notification("window/showMessage",
                                    lambda p: "changed while the kernel was written" in p["message"],
                                    timeout=TIMEOUT)
        assert shown["type"] == 2
        assert not edits
    finally:
        c.close()



def test_an_editor_without_versioned_edits_is_refused_before_any_work(tmp_path):
    from lsp_client import default_capabilities

    caps = default_capabilities()
    caps["workspace"]["workspaceEdit"] = {}
    c = LspClient(server_requests={"workspace/applyEdit": lambda params: {"applied": True}})
    c.initialize(capabilities=caps, options={"python": str(PYTHON)})
    try:
        uri = open_file(c, tmp_path / "scale_bias.py", SCALE_BIAS)
        command = next(a for a in actions(c, uri, 6)
                       if a["title"] == "Write a Pallas kernel for this")["command"]
        answer = c.request("workspace/executeCommand",
                           {"command": command["command"], "arguments": command["arguments"]})
        assert "error" in answer, answer
        assert "documentChanges" in answer["error"]["message"]
        status = c.request("maxkernel/status")["result"]
        assert status["runningJobs"]["kernelWriting"] == 0
    finally:
        c.close()
