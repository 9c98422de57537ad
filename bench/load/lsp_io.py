"""A non-blocking LSP connection to a child process for the load bench (stdlib only).

Single-threaded: everything goes through select() with a timeout. Each complete frame is stamped
with the clock at the read that completed it and queued in `inbox`; requests from the server are
answered at once through `on_server_request` and also queued, so the bench can count them.
"""
import collections
import json
import os
import selectors
import subprocess
import time

clock = time.perf_counter


class ProtocolError(RuntimeError):
    pass


class Connection:
    def __init__(self, argv, cwd, env, on_server_request):
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, bufsize=0)
        self.out_fd, self.err_fd, self.in_fd = (self.proc.stdout.fileno(), self.proc.stderr.fileno(),
                                                self.proc.stdin.fileno())
        os.set_blocking(self.in_fd, False)
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.out_fd, selectors.EVENT_READ, "out")
        self.sel.register(self.err_fd, selectors.EVENT_READ, "err")
        self.on_server_request = on_server_request
        self.buf = bytearray()
        self.err_buf = bytearray()
        self.outgoing = bytearray()
        self.out_closed = False
        self.inbox = collections.deque()  # (arrival time, message)
        self.stderr_lines = []
        self.next_id = 1

    def pump(self, timeout):
        """Waits up to `timeout` seconds for I/O and handles whatever is ready."""
        want_write = bool(self.outgoing)
        if want_write:
            self.sel.register(self.in_fd, selectors.EVENT_WRITE, "in")
        try:
            events = self.sel.select(max(0.0, timeout))
        finally:
            if want_write:
                self.sel.unregister(self.in_fd)
        for key, _ in events:
            if key.data == "in":
                self._flush()
            elif key.data == "err":
                chunk = os.read(self.err_fd, 1 << 16)
                if not chunk:
                    self.sel.unregister(self.err_fd)
                    continue
                self.err_buf += chunk
                *done, rest = self.err_buf.split(b"\n")
                self.stderr_lines += [line.decode(errors="replace") for line in done]
                self.err_buf = bytearray(rest)
            else:
                chunk = os.read(self.out_fd, 1 << 20)
                t = clock()
                if not chunk:
                    self.sel.unregister(self.out_fd)
                    self.out_closed = True
                    continue
                self.buf += chunk
                self._parse(t)

    def _flush(self):
        try:
            n = os.write(self.in_fd, self.outgoing[:1 << 16])
            del self.outgoing[:n]
        except BlockingIOError:
            pass

    def _parse(self, t):
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            headers = {}
            for line in bytes(self.buf[:end]).decode("ascii").split("\r\n"):
                key, _, value = line.partition(":")
                headers[key.strip().lower()] = value.strip()
            try:
                length = int(headers["content-length"])
            except (KeyError, ValueError):
                raise ProtocolError(f"bad frame header {headers}")
            if len(self.buf) < end + 4 + length:
                return
            msg = json.loads(bytes(self.buf[end + 4:end + 4 + length]))
            del self.buf[:end + 4 + length]
            if "method" in msg and "id" in msg:
                self._queue({"jsonrpc": "2.0", "id": msg["id"], "result": self.on_server_request(msg)})
            self.inbox.append((t, msg))

    def _queue(self, payload):
        body = json.dumps(payload).encode()
        self.outgoing += b"Content-Length: %d\r\n\r\n%s" % (len(body), body)

    def write(self, payload, timeout=30.0):
        """Sends one message, reading meanwhile while the pipe is full; returns the send time."""
        self._queue(payload)
        t = clock()
        self._flush()
        deadline = t + timeout
        while self.outgoing:
            if clock() >= deadline:
                raise ProtocolError(f"could not write for {timeout}s")
            self.pump(deadline - clock())
        return t

    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        return self.write(msg)

    def send_request(self, method, params=None):
        rid = self.next_id
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        return rid, self.write(msg)

    def wait_reply(self, rid, timeout):
        """Blocks (pumping) until the reply to `rid` is in the inbox; returns it without removing it.
        Used only before and after the measured phase."""
        deadline = clock() + timeout
        while True:
            for _, m in self.inbox:
                if m.get("id") == rid and "method" not in m:
                    return m
            if self.out_closed or clock() >= deadline:
                raise ProtocolError(f"no reply to request {rid} within {timeout}s; stderr tail:\n"
                                    + "\n".join(self.stderr_lines[-15:]))
            self.pump(deadline - clock())

    def status(self):
        """VmRSS, VmHWM (KiB) and Threads of the server process, or None once it is gone."""
        out = {}
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    key, _, value = line.partition(":")
                    if key in ("VmRSS", "VmHWM", "Threads"):
                        out[key] = int(value.split()[0])
        except OSError:
            return None
        try:  # the main thread (tid == pid): ns on a CPU, ns waiting on a run queue
            with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/schedstat") as f:
                out["main_run_ns"], out["main_wait_ns"] = (int(x) for x in f.read().split()[:2])
        except (OSError, ValueError):
            pass
        return out

    def close_and_wait(self, timeout):
        """Reads until the server exits (after `exit`); returns its exit code, or None on hang."""
        deadline = clock() + timeout
        while self.proc.poll() is None and clock() < deadline:
            if not self.out_closed:
                self.pump(min(0.5, deadline - clock()))
            else:
                try:
                    self.proc.wait(max(0.0, min(0.5, deadline - clock())))
                except subprocess.TimeoutExpired:
                    pass
        if self.err_buf:
            self.stderr_lines.append(self.err_buf.decode(errors="replace"))
            self.err_buf = bytearray()
        return self.proc.poll()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.sel.close()


def descendants(pid):
    """Processes below pid (the server's workers) with their VmRSS in KiB."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], list(children.get(pid, []))
    while todo:
        p = todo.pop()
        found.append(p)
        todo += children.get(p, [])
    rss = 0
    for p in found:
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        rss += int(line.split()[1])
        except OSError:
            pass
    return len(found), rss
