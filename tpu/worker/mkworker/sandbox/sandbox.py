"""The judge's side of the candidate's process (issue 36): a zygote that imported JAX before any
candidate existed forks one fresh child per task or candidate (sandbox.zygote); the judge talks to the
child over its own socket only, reads data back (protocol.wire) and kills the child's process group at
the end. Nothing the child made is imported, called or unpickled here."""

from __future__ import annotations

import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

from mkworker import common as C
from mkworker.protocol import wire

# The zygote runs as a module of the package, with the worker directory (the one above the
# package) as its import root: -P keeps the current directory off its sys.path.
ZYGOTE_MODULE = "mkworker.sandbox.zygote"
WORKER_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# A child that has not answered after this long is killed (the verdict says so).
try:
    WALL_SECONDS = float(os.environ.get("MAXKERNEL_CANDIDATE_WALL_S", "300"))
except ValueError:
    WALL_SECONDS = 300.0


class ChildFailed(C.WorkerError):
    """The child ended without a well-formed answer: a verdict about the candidate, not a bug."""


class Zygote:
    def __init__(self):
        self.proc = None
        self.ctl = None

    def _start(self):
        ours, theirs = socket.socketpair()
        env = dict(os.environ)
        env["PYTHONPATH"] = WORKER_DIR + os.pathsep + env.get("PYTHONPATH", "")
        self.proc = subprocess.Popen(
            [sys.executable, "-P", "-m", ZYGOTE_MODULE, str(theirs.fileno())], pass_fds=(theirs.fileno(),), close_fds=True,
            stdin=subprocess.DEVNULL, stdout=sys.__stderr__.fileno(), env=env, start_new_session=True)
        theirs.close()
        self.ctl = ours

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def fork(self) -> tuple[int, socket.socket]:
        """(pid, the judge's end of the new child's socket). The zygote is restarted once if a
        child (or anything else) ended it."""
        for attempt in (0, 1):
            if not self.alive():
                self._start()
            ours, theirs = socket.socketpair()
            try:
                socket.send_fds(self.ctl, [b"f"], [theirs.fileno()])
                raw = _recv_exact(self.ctl, 8, time.monotonic() + 60)
                return struct.unpack(">q", raw)[0], ours
            except (OSError, ChildFailed):
                ours.close()
                self.close()
                if attempt:
                    raise C.WorkerError(C.INTERNAL, "the candidate process could not be started") from None
            finally:
                theirs.close()
        raise AssertionError("unreachable")

    def exit_code(self, pid: int, wait_s: float = 1.0) -> int | None:
        """How the child `pid` ended: its exit code, or minus the signal that killed it; None when
        the zygote cannot tell within `wait_s` (a child whose socket closed is normally reaped
        within milliseconds)."""
        deadline = time.monotonic() + wait_s
        while self.alive() and self.ctl is not None:
            try:
                self.ctl.sendall(b"w" + struct.pack(">q", pid))
                code = struct.unpack(">q", _recv_exact(self.ctl, 8, time.monotonic() + 5))[0]
            except (OSError, ChildFailed):
                return None
            if code != _STILL_RUNNING:
                return code
            if time.monotonic() > deadline:
                return None
            time.sleep(0.02)
        return None

    def close(self):
        if self.ctl is not None:
            self.ctl.close()
            self.ctl = None
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            self.proc.wait()
            self.proc = None


_zygote = Zygote()


def run_child(request: dict, wall_s: float | None = None, cancel=None,
              blobs: list[bytes] = ()) -> tuple[dict, list[bytes]]:
    """Runs one child with `request` (its role and fields, and `blobs` of data for it) and returns
    its answer (header, blobs).
    The child's whole process group is killed afterwards, whatever happened."""
    pid, sock = _zygote.fork()
    deadline = time.monotonic() + (wall_s or WALL_SECONDS)
    workdir = tempfile.mkdtemp(prefix="maxkernel-candidate-")
    try:
        wire.send(sock, dict(request, workdir=workdir), list(blobs))
        return wire.recv(sock, deadline, cancel=cancel, what="the candidate's process")
    except wire.WireError as e:
        message = e.message
        if e.ended:
            message = ended_message(_zygote.exit_code(pid), "the candidate's process")
        raise ChildFailed(C.CANCELLED if e.kind == "cancelled" else C.RUNTIME, message) from None
    finally:
        sock.close()
        try:
            os.killpg(pid, signal.SIGKILL)  # the child is its own session and group leader
        except OSError:
            pass
        shutil.rmtree(workdir, ignore_errors=True)


_STILL_RUNNING = -1000  # zygote.STILL_RUNNING (the zygote's module is never imported here)
# Signals a child meets at its limits, and what they mean there.
_SIGNAL_MEANING = {signal.SIGXCPU: "its CPU-time limit", signal.SIGKILL: "killed: a memory limit or the OOM killer",
                   signal.SIGSEGV: "a crash", signal.SIGABRT: "an abort", signal.SIGBUS: "a crash"}


def ended_message(code: int | None, what: str) -> str:
    """Why a child ended without an answer, as far as its exit status tells."""
    head = f"{what} ended without an answer"
    if code is None:
        return f"{head} (it exited, raised past its handler, or was killed by a limit)"
    if code >= 0:
        return f"{head}: it exited with code {code}"
    sig = -code
    try:
        name = signal.Signals(sig).name
    except ValueError:
        name = f"signal {sig}"
    meaning = _SIGNAL_MEANING.get(sig)
    return f"{head}: it crashed (signal {sig}, {name}{'; ' + meaning if meaning else ''})"


class KeptChild:
    """A child the judge keeps for more questions (the task's reference serving more seeds): one
    fork, then one answer per `ask`. Anything that goes wrong kills it; the owner then drops it."""

    def __init__(self):
        self.pid, self.sock = _zygote.fork()
        self.workdir = tempfile.mkdtemp(prefix="maxkernel-reference-")
        self.asked = 0

    def ask(self, request: dict, wall_s: float | None = None, cancel=None,
            blobs: list[bytes] = ()) -> tuple[dict, list[bytes]]:
        deadline = time.monotonic() + (wall_s or WALL_SECONDS)
        try:
            first = {"workdir": self.workdir} if not self.asked else {}
            self.asked += 1
            wire.send(self.sock, dict(request, **first), list(blobs))
            return wire.recv(self.sock, deadline, cancel=cancel, what="the reference's process")
        except (wire.WireError, OSError) as e:
            code = _zygote.exit_code(self.pid) if getattr(e, "ended", False) else None
            self.close()
            if isinstance(e, wire.WireError):
                message = ended_message(code, "the reference's process") if e.ended else e.message
                raise ChildFailed(C.CANCELLED if e.kind == "cancelled" else C.RUNTIME, message) from None
            raise ChildFailed(C.RUNTIME, f"the reference's process is gone ({e})") from None

    def alive(self) -> bool:
        return self.sock is not None

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except OSError:
                pass
            shutil.rmtree(self.workdir, ignore_errors=True)


def _recv_exact(sock, n, deadline):
    buf = b""
    while len(buf) < n:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([sock], [], [], left)[0]:
            raise ChildFailed(C.INTERNAL, "the zygote did not answer")
        part = sock.recv(n - len(buf))
        if not part:
            raise ChildFailed(C.INTERNAL, "the zygote closed its socket")
        buf += part
    return buf
