#!/usr/bin/env python3
"""Writes the seed corpora in tests/fuzz/corpus/<target>/ from examples/ and tests/corpus.

Run again after adding kernels to either; the seeds are checked in, so run.sh does not need it.
"""
import json
import pathlib
import shutil

root = pathlib.Path(__file__).resolve().parents[2]
out = root / "tests" / "fuzz" / "corpus"
kernels = sorted((root / "examples").glob("*.py")) + sorted((root / "tests" / "corpus").glob("*/*.py"))


def frame(message) -> bytes:
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def target(name: str) -> pathlib.Path:
    d = out / name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    return d


# pallas_model: the kernels themselves.
# pallas_model: the kernels themselves, read in place by run.sh (examples/, tests/corpus/*/), so
# they are not copied here; only a seed the other folders lack.
d = target("pallas_model")
(d / "empty_module.py").write_bytes(b"import jax\n")

# framing: well-formed and damaged streams.
d = target("framing")
init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}
(d / "one_frame").write_bytes(frame(init))
(d / "two_frames").write_bytes(frame(init) + frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
(d / "content_type").write_bytes(
    b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: 2\r\n\r\n{}")
(d / "junk_before").write_bytes(b"garbage line\r\n" + frame(init))
(d / "bad_length").write_bytes(b"Content-Length: -1\r\n\r\n{}" + frame(init))
(d / "truncated").write_bytes(frame(init)[:-5])
(d / "lf_only").write_bytes(b"Content-Length: 2\n\n{}")

# lsp_server: sessions over real kernels.
d = target("lsp_server")


def session(uri: str, text: str, extra=()) -> bytes:
    msgs = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"capabilities": {"textDocument": {"hover": {"contentFormat": ["markdown"]}}}}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "method": "textDocument/didOpen",
         "params": {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}},
        {"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover",
         "params": {"textDocument": {"uri": uri}, "position": {"line": 10, "character": 8}}},
        {"jsonrpc": "2.0", "id": 3, "method": "textDocument/codeLens", "params": {"textDocument": {"uri": uri}}},
        {"jsonrpc": "2.0", "id": 4, "method": "textDocument/inlayHint",
         "params": {"textDocument": {"uri": uri},
                    "range": {"start": {"line": 0, "character": 0}, "end": {"line": 99, "character": 0}}}},
        {"jsonrpc": "2.0", "id": 5, "method": "textDocument/documentSymbol",
         "params": {"textDocument": {"uri": uri}}},
        {"jsonrpc": "2.0", "method": "textDocument/didChange",
         "params": {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
             {"range": {"start": {"line": 3, "character": 0}, "end": {"line": 3, "character": 4}},
              "text": "\u00e9\U0001F600\r\n"}]}},
        *extra,
        {"jsonrpc": "2.0", "id": 6, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    return b"".join(frame(m) for m in msgs)


for k in kernels[:6]:
    (d / (k.stem + ".lsp")).write_bytes(session("file:///w/" + k.name, k.read_text()))
small = (root / "examples" / "softmax_rows.py").read_text()
(d / "config_and_cancel.lsp").write_bytes(session("file:///w/s.py", small, extra=[
    {"jsonrpc": "2.0", "method": "workspace/didChangeConfiguration",
     "params": {"settings": {"maxkernel": {"target": "v5e"}}}},
    {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 7}},
    {"jsonrpc": "2.0", "id": 7, "method": "textDocument/codeLens", "params": {"textDocument": {"uri": "file:///w/s.py"}}},
    {"jsonrpc": "2.0", "id": 8, "method": "workspace/executeCommand",
     "params": {"command": "maxkernel.test", "arguments": [{"uri": "file:///w/s.py", "kernel": 0}]}},
    {"jsonrpc": "2.0", "method": "textDocument/didClose", "params": {"textDocument": {"uri": "file:///w/s.py"}}},
]))
(d / "bad_shapes.lsp").write_bytes(b"".join([
    frame(b"{not json"), frame(b"[1,2]"), frame({"jsonrpc": "2.0", "id": [1], "method": "x"}),
    frame({"jsonrpc": "2.0", "id": 9, "method": 5}), frame({"jsonrpc": "2.0", "id": 10, "method": "x", "params": 3}),
    frame({"jsonrpc": "2.0", "id": 11}), frame(init), frame({"jsonrpc": "2.0", "id": 12, "method": "initialize"}),
]))

# text_sync: the input is consumed by FuzzedDataProvider; any bytes are a valid script.
d = target("text_sync")
for i, seed in enumerate([bytes(range(256)), b"\x05\x0e\x10\x11\x04" * 40, b"\xff" * 64 + b"\x00" * 64,
                          (root / "examples" / "softmax_rows.py").read_bytes()[:300]]):
    (d / f"script_{i}").write_bytes(seed)

# worker_reply: what a worker writes on stdout, good and bad.
d = target("worker_reply")
lines = {
    "ok": {"id": "c1", "ok": True, "lowered": True, "elapsed_s": 0.5},
    "failed": {"id": "c2", "ok": False, "error": {"kind": "lowering", "message": "shape mismatch"}},
    "event": {"id": "c3", "event": "progress", "message": "compiling", "fraction": 0.5},
    "hello": {"id": "c4", "ok": True, "platform": "cpu", "device_kind": "cpu", "jax_version": "0.10.2"},
}
for name, m in lines.items():
    (d / name).write_bytes(json.dumps(m).encode() + b"\n")
(d / "mixed").write_bytes(b"".join(json.dumps(m).encode() + b"\n" for m in lines.values()) +
                          b"Traceback (most recent call last):\n{\"id\": \"c9\"\n\x00\xff\n")
print("seeds written to", out)
