"""Documents and editor features end to end: diagnostics, hover, lenses, inlay hints, symbols,
incremental sync in UTF-16 with non-ASCII text and CRLF, configuration."""
import shutil
from pathlib import Path

from lsp_client import LspClient, default_capabilities, server_binary

CORPUS = Path(__file__).resolve().parents[1] / "corpus"

KERNEL = '''import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

M, N = 1024, 1024
BM = 256  # ünïcödé 日本 😀 in a comment before the kernel


def add_one(x_ref, o_ref):
    o_ref[...] = x_ref[...] + 1


def run(x):
    return pl.pallas_call(
        add_one,
        out_shape=jax.ShapeDtypeStruct((M, N), jnp.float32),
        grid=(M // BM,),
        in_specs=[pl.BlockSpec((BM, N), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((BM, N), lambda i: (i, 0)),
    )(x)
'''


def line_of(text, needle):
    for i, line in enumerate(text.splitlines()):
        if needle in line:
            return i
    raise AssertionError(needle)


def utf16_col(line, needle):
    prefix = line[: line.index(needle)]
    return len(prefix.encode("utf-16-le")) // 2


def test_clean_kernel_has_no_diagnostics_and_gets_features(ready):
    uri = "file:///clean.py"
    ready.open(uri, KERNEL)
    assert ready.diagnostics(uri, version=1) == []

    call_line = line_of(KERNEL, "pl.pallas_call(")
    hover = ready.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                 "position": {"line": call_line, "character": 16}})["result"]
    text = hover["contents"]["value"]
    assert "add_one" in text and "(4,)" in text and "(256, 1024)" in text
    assert "1 MiB" in text  # 256 x 1024 x 4 bytes per out block

    lenses = ready.request("textDocument/codeLens", {"textDocument": {"uri": uri}})["result"]
    titles = [lens["command"]["title"] for lens in lenses]
    assert titles == ["Optimize step by step", "Auto", "Graph search", "Test", "Profile"]
    assert all(lens["range"]["start"]["line"] == call_line for lens in lenses)

    hints = ready.request("textDocument/inlayHint", {"textDocument": {"uri": uri}, "range": {
        "start": {"line": 0, "character": 0}, "end": {"line": 40, "character": 0}}})["result"]
    labels = [h["label"] for h in hints]
    assert any("1 MiB float32" in label for label in labels), labels
    assert any(label.strip().startswith("VMEM >=") for label in labels), labels

    symbols = ready.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})["result"]
    assert [s["name"] for s in symbols] == ["add_one (in run)"]


def test_incremental_edit_with_non_ascii_text_republishes(ready):
    uri = "file:///edit.py"
    ready.open(uri, KERNEL)
    assert ready.diagnostics(uri, version=1) == []
    # Replace "BM = 256" by "BM = 100" with a UTF-16 range on a line full of multi-unit characters.
    line = line_of(KERNEL, "BM = 256")
    col = utf16_col(KERNEL.splitlines()[line], "256")
    ready.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": 2},
        "contentChanges": [{"range": {"start": {"line": line, "character": col},
                                      "end": {"line": line, "character": col + 3}}, "text": "100"}]})
    diags = ready.diagnostics(uri, version=2)
    # Only the output's array shape is known statically, so only its block is flagged.
    assert [d["code"] for d in diags] == ["MK001"]
    block_line = line_of(KERNEL, "out_specs")
    out_diag = [d for d in diags if d["range"]["start"]["line"] == block_line][0]
    assert out_diag["range"]["start"]["character"] == utf16_col(KERNEL.splitlines()[block_line], "(BM, N)")
    assert out_diag["codeDescription"]["href"].endswith("#mk001-block-shape-tiling")

    # Insert an emoji before the number inside the comment: positions after it shift by 2 units.
    line_text = KERNEL.splitlines()[line]
    emoji_col = utf16_col(line_text, "😀") + 2
    ready.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": 3},
        "contentChanges": [{"range": {"start": {"line": line, "character": emoji_col},
                                      "end": {"line": line, "character": emoji_col}}, "text": "🚀"},
                           {"range": {"start": {"line": line, "character": col},
                                      "end": {"line": line, "character": col + 3}}, "text": "512"}]})
    assert ready.diagnostics(uri, version=3) == []


def test_crlf_document_positions(ready):
    uri = "file:///crlf.py"
    text = KERNEL.replace("BM = 256", "BM = 100").replace("\n", "\r\n")
    ready.open(uri, text)
    diags = ready.diagnostics(uri, version=1)
    lines = text.split("\r\n")
    block_line = [i for i, line in enumerate(lines) if "out_specs" in line][0]
    assert block_line in [d["range"]["start"]["line"] for d in diags]
    # Delete the whole "in_specs" line (just above) via an incremental change spanning its CRLF.
    ready.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": 2},
        "contentChanges": [{"range": {"start": {"line": block_line - 1, "character": 0},
                                      "end": {"line": block_line, "character": 0}}, "text": ""}]})
    diags = ready.diagnostics(uri, version=2)
    assert len(diags) == 1 and diags[0]["range"]["start"]["line"] == block_line - 1
    col = utf16_col(lines[block_line], "(BM, N)")
    assert diags[0]["range"]["start"]["character"] == col


def test_half_typed_code_keeps_the_partial_model(ready):
    uri = "file:///half.py"
    broken = KERNEL + "\ndef later(:\n    return pl.pallas_call(\n"
    ready.open(uri, broken)
    ready.diagnostics(uri, version=1)
    symbols = ready.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})["result"]
    assert "add_one (in run)" in [s["name"] for s in symbols]


def test_corpus_bad_file_through_the_server(ready):
    path = CORPUS / "bad" / "mk003_index_map_arity.py"
    uri = path.as_uri()
    text = path.read_text()
    ready.open(uri, text)
    diags = ready.diagnostics(uri)
    expected = [i for i, line in enumerate(text.splitlines()) if "# expect: MK003" in line]
    assert [d["range"]["start"]["line"] for d in diags if d["code"] == "MK003"] == expected


def test_configuration_pull_changes_the_target():
    big = KERNEL.replace("BM = 256", "BM = 1024").replace("M, N = 1024, 1024", "M, N = 4096, 4096")
    # 1024 x 4096 f32 blocks: 16 MiB each, x2 buffers x2 operands = 64 MiB: over v5e's 16 MiB scoped
    # limit (warning) but within 128 MiB physical; over v4's 16 MiB physical VMEM (error).
    target = {"value": "v4"}
    c = LspClient(server_requests={"workspace/configuration": lambda p: [{"target": target["value"]}]})
    try:
        c.initialize(options={"maxkernel": {"target": "v5e"}})
        uri = "file:///cfg.py"
        c.open(uri, big)
        diags = c.diagnostics(uri)
        assert [(d["code"], d["severity"]) for d in diags] == [("MK007", 2)]
        c.notify("workspace/didChangeConfiguration", {"settings": None})
        diags = c.diagnostics(uri)
        assert [(d["code"], d["severity"]) for d in diags] == [("MK007", 1)]
        assert "v4" in diags[0]["message"]
        assert c.received_server_requests[0]["params"]["items"] == [{"section": "maxkernel"}]
    finally:
        c.close()


def test_configuration_push_without_workspace_configuration():
    caps = default_capabilities()
    caps["workspace"]["configuration"] = False
    c = LspClient()
    try:
        c.initialize(capabilities=caps)
        c.notify("workspace/didChangeConfiguration", {"settings": {"maxkernel": {"target": "v9x"}}})
        msg = c.wait_notification("window/showMessage")
        assert "unknown TPU generation 'v9x'" in msg["message"]
    finally:
        c.close()


def test_diagnostic_links_are_absolute_uris_without_local_docs(tmp_path, monkeypatch):
    """A server run away from any docs/ folder links the published page, never a bare path."""
    moved = tmp_path / "bin" / "maxkernel-lsp"
    moved.parent.mkdir()
    shutil.copy2(server_binary(), moved)
    monkeypatch.setenv("MAXKERNEL_LSP", str(moved))
    client = LspClient()
    try:
        client.initialize()
        uri = "file:///links.py"
        client.open(uri, KERNEL.replace("BM = 256", "BM = 100"))
        hrefs = [d["codeDescription"]["href"] for d in client.diagnostics(uri, version=1)]
        assert hrefs, "expected an MK001 finding"
        assert all(h.startswith("https://") and h.endswith("/docs/diagnostics.md#mk001-block-shape-tiling")
                   for h in hrefs), hrefs
    finally:
        client.close()
