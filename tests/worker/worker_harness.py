"""Harness for the worker tests: a real worker process over pipes.

Every wait has a timeout (queue.get(timeout=...)); nothing sleeps.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKER = os.path.join(ROOT, "tpu", "worker", "maxkernel_worker.py")
TASKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tasks")

DEFAULT_TIMEOUT = 120.0


def task_path(*parts) -> str:
    return os.path.join(TASKS, *parts)


def read_task(*parts) -> str:
    with open(task_path(*parts), encoding="utf-8") as f:
        return f.read()


def marker_line(text: str, marker: str) -> int:
    for n, line in enumerate(text.splitlines(), start=1):
        if marker in line:
            return n
    raise AssertionError(f"marker {marker!r} not in text")


class WorkerProcess:
    def __init__(self, extra_env=None, args=None):
        env = dict(os.environ)
        env.setdefault("JAX_PLATFORMS", "cpu")
        env.update(extra_env or {})
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(args or [sys.executable, WORKER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr, env=env)
        self.messages: queue.Queue = queue.Queue()
        self.raw_lines: list[bytes] = []
        self._ids = itertools.count(1)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._stash: list[dict] = []

    def _read(self):
        for line in iter(self.proc.stdout.readline, b""):
            self.raw_lines.append(line)
            try:
                self.messages.put(json.loads(line))
            except json.JSONDecodeError:
                self.messages.put({"__bad_line__": line.decode("utf-8", "replace")})
        self.messages.put(None)

    def send_raw(self, data: bytes):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, op: str, **fields) -> int:
        rid = fields.pop("id", None) or next(self._ids) + 1000
        msg = {"id": rid, "op": op}
        msg.update(fields)
        self.send_raw((json.dumps(msg) + "\n").encode("utf-8"))
        return rid

    def next_message(self, timeout=DEFAULT_TIMEOUT) -> dict:
        if self._stash:
            return self._stash.pop(0)
        try:
            m = self.messages.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no message from the worker within {timeout}s; stderr:\n{self.stderr_text()}")
        if m is None:
            raise AssertionError(f"worker closed stdout; stderr:\n{self.stderr_text()}")
        assert "__bad_line__" not in m, f"non-JSON line on stdout: {m['__bad_line__']!r}"
        return m

    def wait_for(self, rid, timeout=DEFAULT_TIMEOUT, events=None) -> dict:
        """The response to request `rid`; progress events for it are
        appended to `events`, other messages are kept for later."""
        kept = []
        try:
            while True:
                m = self.next_message(timeout)
                if m.get("id") == rid and "event" in m:
                    if events is not None:
                        events.append(m)
                    continue
                if m.get("id") == rid and "ok" in m:
                    return m
                kept.append(m)
        finally:
            self._stash = kept + self._stash

    def wait_event(self, rid, predicate, timeout=DEFAULT_TIMEOUT) -> dict:
        kept = []
        try:
            while True:
                m = self.next_message(timeout)
                if m.get("id") == rid and "event" in m and predicate(m):
                    return m
                kept.append(m)
        finally:
            self._stash = kept + self._stash

    def request(self, op: str, timeout=DEFAULT_TIMEOUT, **fields) -> dict:
        rid = self.send(op, **fields)
        return self.wait_for(rid, timeout)

    def stderr_text(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode("utf-8", "replace")[-5000:]

    def close(self):
        if self.proc.poll() is None:
            try:
                self.send("shutdown")
                self.proc.wait(timeout=30)
            except Exception:  # noqa: BLE001
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.stderr.close()
