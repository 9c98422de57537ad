"""A scripted LSP client that drives the real maxkernel-lsp binary over stdio.

Replies, notifications and the server's own requests are read on a background thread into a queue;
tests wait on those events (with timeouts), never on sleeps.
"""
import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def server_binary():
    return os.environ.get("MAXKERNEL_LSP", str(ROOT / "build" / "bin" / "maxkernel-lsp"))


def frame(payload):
    body = payload if isinstance(payload, (bytes, bytearray)) else json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class LspClient:
    def __init__(self, extra_args=(), server_requests=None):
        self.proc = subprocess.Popen(
            [server_binary(), "--enable-test-methods", *extra_args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.inbox = queue.Queue()
        self.stash = []  # messages read while waiting for something else
        self.next_id = 1
        # method -> callable(params) -> result, for requests the server sends us
        self.server_requests = dict(server_requests or {})
        self.received_server_requests = []
        self.stderr_lines = []
        self._stderr_changed = threading.Condition()
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    # ----- plumbing -------------------------------------------------------------------------
    def _read_stdout(self):
        out = self.proc.stdout
        while True:
            headers = {}
            line = out.readline()
            if not line:
                self.inbox.put(None)
                return
            while line.strip():
                name, _, value = line.decode().partition(":")
                headers[name.strip().lower()] = value.strip()
                line = out.readline()
            body = out.read(int(headers["content-length"]))
            msg = json.loads(body)
            if "method" in msg and "id" in msg:
                self._answer_server_request(msg)
            self.inbox.put(msg)

    def _read_stderr(self):
        for line in self.proc.stderr:
            with self._stderr_changed:
                self.stderr_lines.append(line.decode(errors="replace"))
                self._stderr_changed.notify_all()

    def wait_stderr(self, substring, timeout=10):
        """Waits until the server has logged a line containing `substring`."""
        with self._stderr_changed:
            ok = self._stderr_changed.wait_for(
                lambda: any(substring in line for line in self.stderr_lines), timeout)
        assert ok, f"server never logged {substring!r}; stderr: {''.join(self.stderr_lines[-20:])}"


    def _answer_server_request(self, msg):
        self.received_server_requests.append(msg)
        handler = self.server_requests.get(msg["method"], lambda params: None)
        result = handler(msg.get("params"))
        if result == "NO_REPLY":
            return
        try:
            self.write({"jsonrpc": "2.0", "id": msg["id"], "result": result})
        except (BrokenPipeError, ValueError):
            pass  # the server is gone (a test killed it); nothing to answer


    def write(self, payload):
        self.proc.stdin.write(frame(payload))
        self.proc.stdin.flush()

    def write_bytes(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    # ----- requests -------------------------------------------------------------------------
    def send_request(self, method, params=None):
        rid = self.next_id
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.write(msg)
        return rid

    def request(self, method, params=None, timeout=10):
        rid = self.send_request(method, params)
        return self.wait_response(rid, timeout)

    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.write(msg)

    def wait_for(self, predicate, timeout=10, what="message"):
        for i, m in enumerate(self.stash):
            if predicate(m):
                return self.stash.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {what} within {timeout}s; stderr: {''.join(self.stderr_lines[-20:])}")
            try:
                m = self.inbox.get(timeout=left)
            except queue.Empty:
                continue
            if m is None:
                raise EOFError(f"server closed its output while waiting for {what}")
            if predicate(m):
                return m
            self.stash.append(m)

    def wait_response(self, rid, timeout=10):
        return self.wait_for(lambda m: m.get("id") == rid and "method" not in m, timeout, f"response {rid}")

    def wait_notification(self, method, predicate=lambda p: True, timeout=10):
        return self.wait_for(
            lambda m: m.get("method") == method and "id" not in m and predicate(m.get("params")),
            timeout,
            method,
        )["params"]

    # ----- lifecycle helpers ----------------------------------------------------------------
    def initialize(self, capabilities=None, options=None):
        caps = capabilities if capabilities is not None else default_capabilities()
        params = {"processId": os.getpid(), "rootUri": None, "capabilities": caps}
        if options is not None:
            params["initializationOptions"] = options
        resp = self.request("initialize", params)
        self.notify("initialized", {})
        return resp

    def open(self, uri, text, version=1, language="python"):
        self.notify("textDocument/didOpen",
                    {"textDocument": {"uri": uri, "languageId": language, "version": version, "text": text}})

    def diagnostics(self, uri, version=None, timeout=10):
        return self.wait_notification(
            "textDocument/publishDiagnostics",
            lambda p: p["uri"] == uri and (version is None or p.get("version") == version),
            timeout,
        )["diagnostics"]

    def shutdown_and_exit(self, timeout=10):
        self.request("shutdown")
        self.notify("exit")
        return self.proc.wait(timeout)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def default_capabilities():
    return {
        "workspace": {"applyEdit": True, "configuration": True,
                      "workspaceEdit": {"documentChanges": True, "changeAnnotationSupport": {}},
                      "inlayHint": {"refreshSupport": True}, "codeLens": {"refreshSupport": True}},
        "window": {"workDoneProgress": True, "showDocument": {"support": True}, "showMessage": {}},
        "textDocument": {"hover": {"contentFormat": ["markdown", "plaintext"]},
                         "documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
                         "publishDiagnostics": {"versionSupport": True}},
    }
