"""The judge's side of the candidate's process (issue 36): a zygote that imported JAX before any
candidate existed forks one fresh child per task or candidate (mkw_zygote); the judge talks to the
child over its own socket only, reads data back (mkw_wire) and kills the child's process group at
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

import mkw_common as C
import mkw_wire

ZYGOTE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mkw_zygote.py")

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
        env["PYTHONPATH"] = os.path.dirname(ZYGOTE) + os.pathsep + env.get("PYTHONPATH", "")
        self.proc = subprocess.Popen(
            [sys.executable, ZYGOTE, str(theirs.fileno())], pass_fds=(theirs.fileno(),), close_fds=True,
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
        mkw_wire.send(sock, dict(request, workdir=workdir), list(blobs))
        return mkw_wire.recv(sock, deadline, cancel=cancel, what="the candidate's process")
    except mkw_wire.WireError as e:
        raise ChildFailed(C.CANCELLED if e.kind == "cancelled" else C.RUNTIME, e.message) from None
    finally:
        sock.close()
        try:
            os.killpg(pid, signal.SIGKILL)  # the child is its own session and group leader
        except OSError:
            pass
        shutil.rmtree(workdir, ignore_errors=True)


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
            mkw_wire.send(self.sock, dict(request, **first), list(blobs))
            return mkw_wire.recv(self.sock, deadline, cancel=cancel, what="the reference's process")
        except (mkw_wire.WireError, OSError) as e:
            self.close()
            if isinstance(e, mkw_wire.WireError):
                raise ChildFailed(C.CANCELLED if e.kind == "cancelled" else C.RUNTIME, e.message) from None
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
