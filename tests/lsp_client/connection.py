"""A JSON-RPC connection to a language server started as a child process (stdlib only).

Every complete frame is stamped with the clock at the read that completed it (decoding comes
after the stamp) and queued in `inbox` as (time, message); writes return the time they started.
Requests from the server are answered as they arrive and queued too, so callers can count them.

Two ways to drive it, one reading path:
  * single-threaded (the benches): every wait is a select() on the server's stdout and stderr
    with a timeout, writes are interleaved with reads so a big write never deadlocks against a
    server that is writing, and no reader thread adds GIL hand-over delays to a measurement;
  * reader_thread=True (the tests): a daemon thread runs the same select() loop, so the server's
    requests are answered and its stderr collected while the test does something else; writes
    block, and waits sleep on a condition instead of reading.
"""
import collections
import contextlib
import gc
import os
import selectors
import subprocess
import threading
import time

from .framing import FrameReader, ProtocolError, frame

clock = time.perf_counter

NO_REPLY = "NO_REPLY"  # a server_requests handler's result that leaves the request unanswered


@contextlib.contextmanager
def collector_paused():
    """Python's cyclic garbage collector off for a measured stretch (the benches). A full
    collection walks every object the client holds; it ran every ~65th large reply (the same
    rounds each run), at whatever allocation came next, often the select() of a wait, and so
    added its 15-70 ms, growing with the client's heap, to the reply in flight. JSON messages
    hold no cycles, so reference counting alone frees them meanwhile; one collection runs at
    the end, outside any measurement."""
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
        gc.collect()


class ServerTimeout(ProtocolError, TimeoutError):
    pass


class ServerClosed(ProtocolError, EOFError):
    pass


class Connection:
    def __init__(self, argv, *, cwd=None, env=None, server_requests=None, on_server_request=None,
                 reader_thread=False, timeout=10.0, name="server"):
        """server_requests: method -> callable(params) -> result (or NO_REPLY) for requests the
        server sends; any other request goes to on_server_request(message) -> result, or is
        answered with a null result. `timeout` is the default of every wait."""
        self.name = name
        self.timeout = timeout
        self.server_requests = dict(server_requests or {})
        self.on_server_request = on_server_request
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, bufsize=0)
        self.out_fd, self.err_fd, self.in_fd = (self.proc.stdout.fileno(), self.proc.stderr.fileno(),
                                                self.proc.stdin.fileno())
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.out_fd, selectors.EVENT_READ, "out")
        self.sel.register(self.err_fd, selectors.EVENT_READ, "err")
        self.reader = FrameReader()
        self.err_buf = bytearray()
        self.outgoing = bytearray()
        self.out_closed = False
        self.err_closed = False
        self.inbox = collections.deque()  # (arrival time, message) not yet taken
        self.stderr_lines = []  # each with its "\n"
        self.received_server_requests = []
        self.next_id = 1
        self.changed = threading.Condition()  # inbox, stderr_lines or out_closed changed
        self.write_lock = threading.Lock()
        self.threaded = reader_thread
        if reader_thread:
            threading.Thread(target=self._read_until_closed, daemon=True).start()
        else:
            os.set_blocking(self.in_fd, False)

    # ----- reading ---------------------------------------------------------------------------
    def pump(self, timeout):
        """Waits up to `timeout` seconds (None: no limit) for I/O and handles whatever is ready.
        Returns False when nothing was. With reader_thread=True only that thread calls it."""
        want_write = bool(self.outgoing)
        if want_write:
            self.sel.register(self.in_fd, selectors.EVENT_WRITE, "in")
        try:
            events = self.sel.select(None if timeout is None else max(0.0, timeout))
        finally:
            if want_write:
                self.sel.unregister(self.in_fd)
        for key, _ in events:
            if key.data == "in":
                self._flush()
            elif key.data == "err":
                self._read_stderr()
            else:
                chunk = os.read(self.out_fd, 1 << 20)
                t = clock()
                if not chunk:
                    self.sel.unregister(self.out_fd)
                    with self.changed:
                        self.out_closed = True
                        self.changed.notify_all()
                    continue
                for msg in self.reader.feed(chunk):
                    self._arrived(t, msg)
        return bool(events)

    def _read_until_closed(self):
        try:
            while not (self.out_closed and self.err_closed):
                self.pump(None)
        except (OSError, ValueError, ProtocolError):
            pass  # the pipes were closed under us (close()), or the server sent garbage
        finally:
            with self.changed:
                self.out_closed = True
                self.changed.notify_all()

    def _read_stderr(self):
        chunk = os.read(self.err_fd, 1 << 16)
        if not chunk:
            self.sel.unregister(self.err_fd)
            self.err_closed = True
            self._flush_stderr()
            return
        self.err_buf += chunk
        *done, rest = self.err_buf.split(b"\n")
        self.err_buf = bytearray(rest)
        if done:
            with self.changed:
                self.stderr_lines += [line.decode(errors="replace") + "\n" for line in done]
                self.changed.notify_all()

    def _flush_stderr(self):
        if self.err_buf:
            with self.changed:
                self.stderr_lines.append(self.err_buf.decode(errors="replace"))
                self.err_buf = bytearray()
                self.changed.notify_all()

    def _arrived(self, t, msg):
        if "method" in msg and "id" in msg:
            self._answer(msg)
        with self.changed:
            self.inbox.append((t, msg))
            self.changed.notify_all()

    def _answer(self, msg):
        self.received_server_requests.append(msg)
        handler = self.server_requests.get(msg["method"])
        if handler is not None:
            result = handler(msg.get("params"))
        elif self.on_server_request is not None:
            result = self.on_server_request(msg)
        else:
            result = None
        if result == NO_REPLY:
            return
        reply = frame({"jsonrpc": "2.0", "id": msg["id"], "result": result})
        if self.threaded:
            try:
                with self.write_lock:
                    self._write_blocking(reply)
            except (OSError, ValueError):
                pass  # the server is gone (a test killed it); nothing to answer
        else:
            self.outgoing += reply

    # ----- writing ---------------------------------------------------------------------------
    def write_bytes(self, data):
        """Sends raw bytes; returns the time the first byte was handed to the kernel."""
        if self.threaded:
            with self.write_lock:
                t = clock()
                self._write_blocking(data)
            return t
        self.outgoing += data
        t = clock()
        self._flush()
        deadline = t + self.timeout
        while self.outgoing:  # the pipe is full: read meanwhile
            if clock() >= deadline:
                raise ProtocolError(f"{self.name}: could not write for {self.timeout}s")
            self.pump(deadline - clock())
        return t

    def _write_blocking(self, data):
        view = memoryview(data)
        while view:
            view = view[self.proc.stdin.write(view):]

    def _flush(self):
        try:
            n = os.write(self.in_fd, self.outgoing[:1 << 16])
            del self.outgoing[:n]
        except BlockingIOError:
            pass

    def write(self, payload):
        """Sends one message (a dict, a list, or bytes for a body that is not JSON)."""
        return self.write_bytes(frame(payload))

    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:  # JSON-RPC: params, when present, is an object or an array
            msg["params"] = params
        return self.write(msg)

    def send_request(self, method, params=None):
        """Returns (id, time of the write)."""
        rid = self.next_id
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        return rid, self.write(msg)

    # ----- waiting ---------------------------------------------------------------------------
    def _wait_until(self, ready, timeout, failure):
        """The first result of ready() that is not None, reading (with a reader thread: sleeping)
        in between; failure(timeout) is raised once `timeout` seconds (None: the default) pass."""
        timeout = self.timeout if timeout is None else timeout
        deadline = clock() + timeout
        with self.changed if self.threaded else _NO_LOCK:
            while True:
                found = ready()
                if found is not None:
                    return found
                left = deadline - clock()
                if left <= 0:
                    raise failure(timeout)
                if self.threaded:
                    self.changed.wait(left)
                else:
                    self.pump(left)

    def wait_stamped(self, predicate, timeout=None, what="message", take=True):
        """Returns (arrival time, message) of the first queued message matching `predicate`,
        removed from the inbox unless take=False; messages before it stay queued."""
        checked = 0

        def match():
            nonlocal checked
            for i in range(checked, len(self.inbox)):
                t, m = self.inbox[i]
                if predicate(m):
                    if take:
                        del self.inbox[i]
                    return t, m
            checked = len(self.inbox)
            if self.out_closed:
                raise ServerClosed(f"{self.name}: server closed its output while waiting for {what}; "
                                   "stderr tail:\n" + "".join(self.stderr_lines[-40:]))
            return None

        return self._wait_until(match, timeout, lambda s: ServerTimeout(
            f"{self.name}: no {what} within {s}s; stderr tail:\n" + "".join(self.stderr_lines[-20:])))

    def wait_response(self, rid, timeout=None, take=True):
        return self.wait_stamped(lambda m: m.get("id") == rid and "method" not in m, timeout,
                                 f"response {rid}", take)[1]

    def wait_stderr(self, substring, timeout=None):
        """Waits until the server has logged a line containing `substring`."""
        def logged():
            if any(substring in line for line in self.stderr_lines):
                return True
            if self.err_closed and not self.threaded:
                raise ServerClosed(f"{self.name}: server closed its stderr before logging {substring!r}")
            return None

        self._wait_until(logged, timeout, lambda s: ServerTimeout(
            f"{self.name}: server never logged {substring!r} within {s}s; stderr: " + "".join(self.stderr_lines[-20:])))

    def wait_closed(self, timeout=None):
        """Waits until the server has closed its output; returns every message still queued."""
        def closed():
            if not self.out_closed:
                return None
            messages = [m for _, m in self.inbox]
            self.inbox.clear()
            return messages

        return self._wait_until(closed, timeout, lambda s: ServerTimeout(
            f"{self.name}: the server's output did not end within {s}s"))

    # ----- the process -----------------------------------------------------------------------
    def close_and_wait(self, timeout=None):
        """Reads until the server exits (after `exit`); returns its exit code, or None on hang."""
        timeout = self.timeout if timeout is None else timeout
        deadline = clock() + timeout
        while self.proc.poll() is None and clock() < deadline:
            if not self.out_closed and not self.threaded:
                self.pump(min(0.5, deadline - clock()))
            else:
                try:
                    self.proc.wait(max(0.0, min(0.5, deadline - clock())))
                except subprocess.TimeoutExpired:
                    pass
        if not self.threaded:
            self._flush_stderr()
        return self.proc.poll()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if not self.threaded:
            self.sel.close()


class _NoLock:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_NO_LOCK = _NoLock()
