#!/usr/bin/env python3
"""Replays recorded LLM exchanges over real HTTP on 127.0.0.1, with faults on demand.

Usage: replay_server.py FIXTURE [--port N]   (port 0, the default, picks a free one)
Prints "PORT <n>" on stdout once it listens; logs to stderr. Python standard library only.

The fixture (docs/llm.md) is one JSON document:
  {"format": "maxkernel-llm-fixture/1", "provider": "openai", "model": "...", "entries": [...]}
Each request is answered by the first unused entry of its provider (found from the path) whose
optional "match" fits ({"purpose": "planner"} and/or {"contains": "text in the request body"}).
An entry holds "status", "headers", and "body" (JSON, or a raw string) and/or "chunks" (SSE
event texts, sent when the request asked for a stream), and an optional "fault".

Faults (an entry's "fault", or queued with POST /_fault {"type": ..., "count": n}):
  rate_limit {retry_after}   429 in the provider's error shape, Retry-After header
  server_error {status}      500 (or status) in the provider's error shape
  malformed                  200 with a body that is not JSON
  reset                      the connection is reset before any response
  hang {seconds}             reads the request, never answers (until seconds pass), then closes
  truncate {after_chunks}    the stream stops after that many events (connection closed)
  slow {chunk_delay_ms}      waits that long before each event
rate_limit/server_error/malformed/reset/hang answer the request by themselves; truncate and slow
change how an entry's own response is sent. Queued faults answer before fixture entries.

Control endpoints: GET /_log (every request seen, with headers and body), POST /_fault,
POST /_reset (all entries unused again, log and queued faults cleared), POST /_load (a whole new
fixture document, then as /_reset: lets one server serve many tests).
"""

import argparse
import json
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

AUTH_HEADERS = ("authorization", "x-api-key", "x-goog-api-key")
STANDALONE_FAULTS = ("rate_limit", "server_error", "malformed", "reset", "hang")


def log(message):
    print(f"replay: {message}", file=sys.stderr, flush=True)


def provider_of(path):
    if path.rstrip("/").endswith("/chat/completions"):
        return "openai"
    if ":generateContent" in path or ":streamGenerateContent" in path:
        return "gemini"
    if path.rstrip("/").endswith("/v1/messages"):
        return "anthropic"
    return None


def wants_stream(provider, path, body):
    if provider == "gemini":
        return ":streamGenerateContent" in path
    return isinstance(body, dict) and body.get("stream") is True


def error_body(provider, status, message):
    """An error body shaped like the provider's own."""
    if provider == "anthropic":
        kind = {429: "rate_limit_error", 529: "overloaded_error"}.get(
            status, "api_error"
        )
        return {"type": "error", "error": {"type": kind, "message": message}}
    if provider == "gemini":
        kind = {429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}.get(status, "INTERNAL")
        return {"error": {"code": status, "message": message, "status": kind}}
    kind = "rate_limit_exceeded" if status == 429 else "server_error"
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


class State:
    def __init__(self, fixture):
        self.fixture = fixture
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.reset()

    def reset(self):
        self.used = set()
        self.log = []
        self.faults = []  # queued via /_fault: [fault, remaining count, provider or None]

    def take(self, provider, purpose, raw_body):
        """The fault queued for this request and the fixture entry that answers it."""
        with self.lock:
            fault = None
            for queued in self.faults:
                if queued[2] in (None, provider):
                    fault = dict(queued[0])
                    queued[1] -= 1
                    if queued[1] <= 0:
                        self.faults.remove(queued)
                    break
            if fault and fault.get("type") in STANDALONE_FAULTS:
                return fault, None, None
            default_provider = self.fixture.get("provider")
            for index, entry in enumerate(self.fixture.get("entries", [])):
                if (
                    index in self.used
                    or entry.get("provider", default_provider) != provider
                ):
                    continue
                match = entry.get("match") or {}
                if "purpose" in match and match["purpose"] != purpose:
                    continue
                if "contains" in match and match["contains"] not in raw_body:
                    continue
                self.used.add(index)
                return fault or entry.get("fault"), entry, index
            return fault, None, None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "maxkernel-replay/1"

    def log_message(self, format, *args):
        log(format % args)

    # --- control endpoints -------------------------------------------------------------------
    def do_GET(self):
        if self.path == "/_log":
            with self.server.state.lock:
                self.send_json(200, self.server.state.log)
        else:
            self.send_json(404, {"error": {"message": f"no such endpoint {self.path}"}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        if self.path == "/_fault":
            return self.control_fault(raw)
        if self.path == "/_reset":
            with self.server.state.lock:
                self.server.state.reset()
            return self.send_json(200, {"ok": True})
        if self.path == "/_load":
            try:
                fixture = json.loads(raw)
                assert isinstance(fixture, dict) and isinstance(
                    fixture.get("entries"), list
                )
            except (ValueError, AssertionError):
                return self.send_json(
                    400, {"error": {"message": "expected a fixture document"}}
                )
            with self.server.state.lock:
                self.server.state.fixture = fixture
                self.server.state.reset()
            log(f"loaded a fixture of {len(fixture['entries'])} entries")
            return self.send_json(200, {"ok": True})
        return self.answer(raw)

    def control_fault(self, raw):
        try:
            fault = json.loads(raw)
            assert isinstance(fault, dict) and isinstance(fault.get("type"), str)
        except (ValueError, AssertionError):
            return self.send_json(
                400, {"error": {"message": 'expected {"type": ..., "count": n}'}}
            )
        with self.server.state.lock:
            self.server.state.faults.append(
                [fault, int(fault.get("count", 1)), fault.get("provider")]
            )
        return self.send_json(200, {"ok": True})

    # --- provider endpoints ------------------------------------------------------------------
    def answer(self, raw):
        provider = provider_of(self.path.split("?")[0])
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        purpose = self.headers.get("X-MaxKernel-Purpose", "")
        stream = wants_stream(provider, self.path, body)
        state = self.server.state
        fault, entry, index = (
            state.take(provider, purpose, raw) if provider else (None, None, None)
        )
        record = {
            "n": None,
            "method": "POST",
            "path": self.path,
            "provider": provider,
            "purpose": purpose,
            "stream": stream,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": raw,
            "entry": index,
            "fault": fault.get("type") if fault else None,
        }
        with state.lock:
            record["n"] = len(state.log)
            state.log.append(record)
        log(
            f"{self.path} purpose={purpose!r} stream={stream} -> entry {index} fault {record['fault']}"
        )

        if provider is None:
            return self.send_json(
                404, {"error": {"message": f"replay: unknown endpoint {self.path}"}}
            )
        kind = fault.get("type") if fault else None
        if kind == "reset":
            return self.reset_connection()
        if kind == "hang":
            deadline = time.monotonic() + float(fault.get("seconds", 60))
            while time.monotonic() < deadline and not state.stopping.is_set():
                time.sleep(0.02)
            self.close_connection = True
            return None
        if kind == "rate_limit":
            headers = {"Retry-After": str(fault.get("retry_after", 1))}
            return self.send_json(
                429, error_body(provider, 429, "Rate limit reached (replay)"), headers
            )
        if kind == "server_error":
            status = int(fault.get("status", 500))
            return self.send_json(
                status, error_body(provider, status, "Internal error (replay)")
            )
        if kind == "malformed":
            return self.send_raw(200, "application/json", b'{"choices": [ {"truncated')
        if entry is None:
            message = f"replay: no unused fixture entry for this {provider} request (purpose {purpose!r})"
            return self.send_json(410, {"error": {"message": message}})
        self.send_entry(entry, stream, fault or {})

    def send_entry(self, entry, stream, fault):
        status = int(entry.get("status", 200))
        headers = dict(entry.get("headers") or {})
        if stream and "chunks" in entry and 200 <= status < 300:
            return self.send_stream(status, headers, entry["chunks"], fault)
        if "body" in entry:
            body = entry["body"]
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            content_type = next(
                (v for k, v in headers.items() if k.lower() == "content-type"),
                "application/json",
            )
            extra = {k: v for k, v in headers.items() if k.lower() != "content-type"}
            return self.send_raw(status, content_type, data, extra)
        # A stream answers a plain request too: better than nothing.
        if "chunks" in entry:
            return self.send_stream(status, headers, entry["chunks"], fault)
        return self.send_json(
            500, {"error": {"message": "replay: the entry has no body or chunks"}}
        )

    def send_stream(self, status, headers, chunks, fault):
        self.send_response(status)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in headers.items():
            if name.lower() not in (
                "content-type",
                "content-length",
                "transfer-encoding",
            ):
                self.send_header(name, value)
        self.end_headers()
        delay = (
            float(fault.get("chunk_delay_ms", 0)) / 1000
            if fault.get("type") == "slow"
            else 0
        )
        cut = (
            int(fault.get("after_chunks", 1))
            if fault.get("type") == "truncate"
            else None
        )
        try:
            for number, chunk in enumerate(chunks):
                if cut is not None and number >= cut:
                    self.wfile.flush()
                    return self.reset_connection()
                if delay and self.server.state.stopping.wait(delay):
                    return None
                data = chunk.encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            log("the client went away mid-stream")
            self.close_connection = True
        return None

    def send_json(self, status, value, headers=None):
        return self.send_raw(
            status, "application/json", json.dumps(value).encode(), headers
        )

    def send_raw(self, status, content_type, data, headers=None):
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, str(value))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def reset_connection(self):
        """Closes with RST: the client sees 'connection reset', not a clean end."""
        try:
            self.connection.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
            )
            self.connection.close()
        except OSError:
            pass
        self.close_connection = True

    def finish(self):
        try:
            super().finish()
        except OSError:
            pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fixture")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    try:
        with open(args.fixture, encoding="utf-8") as file:
            fixture = json.load(file)
        assert isinstance(fixture, dict) and isinstance(
            fixture.get("entries", []), list
        )
    except (OSError, ValueError, AssertionError) as error:
        log(f"cannot load fixture {args.fixture}: {error}")
        return 2
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.state = State(fixture)
    import signal

    def stop(*_):
        server.state.stopping.set()
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"PORT {server.server_address[1]}", flush=True)
    log(
        f"serving {args.fixture} ({len(fixture.get('entries', []))} entries, "
        f"provider {fixture.get('provider')}) on 127.0.0.1:{server.server_address[1]}"
    )
    server.serve_forever(poll_interval=0.05)
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
