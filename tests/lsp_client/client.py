"""The tests' client of the real maxkernel-lsp binary: a Connection read by a background thread.

Tests wait on replies, notifications and log lines (with timeouts), never on sleeps.
"""
import os
from pathlib import Path

from .connection import Connection

ROOT = Path(__file__).resolve().parents[2]


def server_binary():
    return os.environ.get("MAXKERNEL_LSP", str(ROOT / "build" / "bin" / "maxkernel-lsp"))


class LspClient:
    def __init__(self, extra_args=(), server_requests=None):
        """server_requests: method -> callable(params) -> result, for requests the server sends
        us ("NO_REPLY" leaves one unanswered); the others get a null result."""
        self.conn = Connection([server_binary(), "--enable-test-methods", *extra_args],
                               server_requests=server_requests, reader_thread=True)
        self.proc = self.conn.proc
        self.server_requests = self.conn.server_requests
        self.received_server_requests = self.conn.received_server_requests
        self.stderr_lines = self.conn.stderr_lines

    # ----- messages -------------------------------------------------------------------------
    def write(self, payload):
        self.conn.write(payload)

    def write_bytes(self, data):
        self.conn.write_bytes(data)

    def send_request(self, method, params=None):
        return self.conn.send_request(method, params)[0]

    def request(self, method, params=None, timeout=10):
        return self.wait_response(self.send_request(method, params), timeout)

    def notify(self, method, params=None):
        self.conn.notify(method, params)

    def wait_for(self, predicate, timeout=10, what="message"):
        return self.conn.wait_stamped(predicate, timeout, what)[1]

    def wait_response(self, rid, timeout=10):
        return self.conn.wait_response(rid, timeout)

    def wait_notification(self, method, predicate=lambda p: True, timeout=10):
        return self.wait_for(
            lambda m: m.get("method") == method and "id" not in m and predicate(m.get("params")),
            timeout,
            method,
        )["params"]

    def progress_values(self, token, timeout=10, until_kind="end"):
        """Every `$/progress` value of `token`, up to the first of kind `until_kind`."""
        values = []
        while True:
            p = self.wait_notification("$/progress", lambda p: p["token"] == token, timeout=timeout)
            values.append(p["value"])
            if p["value"]["kind"] == until_kind:
                return values

    def wait_stderr(self, substring, timeout=10):
        self.conn.wait_stderr(substring, timeout)

    def queued(self):
        """The messages read but not yet waited for."""
        with self.conn.changed:
            return [m for _, m in self.conn.inbox]

    def wait_closed(self, timeout=10):
        """Every message not yet waited for, once the server has closed its output."""
        return self.conn.wait_closed(timeout)

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

    def open_file(self, path):
        """Opens the file's text as version 1 and waits for its diagnostics; returns (uri, text)."""
        text = Path(path).read_text()
        self.open(Path(path).as_uri(), text)
        self.diagnostics(Path(path).as_uri(), version=1)
        return Path(path).as_uri(), text

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
        self.conn.kill()


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
