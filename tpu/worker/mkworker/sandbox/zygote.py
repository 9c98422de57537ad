"""The zygote: imports JAX and the worker's modules once, before any candidate exists, then forks
one child per request of the judge (sandbox.sandbox). It never runs candidate code itself; each child
starts its own session, keeps only its own socket, takes its limits, leaves the network (where the
OS lets it) and runs sandbox.child. The JAX backend is first initialised in the child, never here."""

from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import socket
import struct
import sys

# Everything the child needs, imported before the first fork (the per-candidate saving).
import jax
import jax.numpy
import numpy  # noqa: F401
from jax.experimental import pallas  # noqa: F401
from jax.experimental.pallas import tpu  # noqa: F401

from mkworker.sandbox import child


def warm() -> None:
    """What every child would otherwise do first, done once here: the modules JAX and Pallas
    import lazily on their first trace and lowering, and one trace of a Pallas kernel in each
    interpret mode (abstract values only: the JAX backend must not start before the fork)."""
    import importlib
    for name in ("jax._src.pallas.mosaic.pallas_call_registration", "jax._src.pallas.mosaic.interpret",
                 "jax.extend", "jax.experimental.multihost_utils", "jaxlib.mlir.dialects.mhlo",
                 "jax.experimental.mosaic.gpu"):  # this one fails without absl; its parts stay loaded
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001, S112 - a module this install lacks is imported by no child either
            continue
    import jax.numpy as jnp
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu

    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2.0

    def call(x):
        spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(2,),
                              in_specs=[spec], out_specs=spec)(x)

    x = jax.ShapeDtypeStruct((16, 128), jnp.float32)
    for mode in (True, pltpu.InterpretParams(uninitialized_memory="nan")):
        try:
            with pltpu.force_tpu_interpret_mode(mode):
                jax.make_jaxpr(call)(x)
            jax.make_jaxpr(lambda seed: jax.random.normal(jax.random.key(seed), (8, 128)))(
                jax.ShapeDtypeStruct((), jnp.uint32))
        except Exception:  # noqa: BLE001, S112 - warming is an optimisation only
            continue


def backend_started() -> bool:
    from jax._src import xla_bridge
    return bool(getattr(xla_bridge, "_backends", None))


CHANNEL_FD = 3
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_PR_SET_DUMPABLE = 4
_PR_SET_PDEATHSIG = 1

# Soft limits of every child (MAXKERNEL_CANDIDATE_LIMITS overrides them): address space (XLA
# reserves several GiB of it, so not below ~6 GiB), CPU seconds, core files.
DEFAULT_LIMITS = {"address_space_mb": 16384, "cpu_seconds": 240}


def _limits() -> dict:
    lim = dict(DEFAULT_LIMITS)
    try:
        lim.update(json.loads(os.environ.get("MAXKERNEL_CANDIDATE_LIMITS") or "{}"))
    except ValueError:
        pass
    return lim


def _apply_limits(lim: dict) -> list[str]:
    done = []
    for key, res, scale in (("address_space_mb", resource.RLIMIT_AS, 1 << 20),
                            ("cpu_seconds", resource.RLIMIT_CPU, 1), ("core", resource.RLIMIT_CORE, 1)):
        value = lim.get(key, 0 if key == "core" else None)
        if value is None:
            continue
        soft = int(value) * scale
        _, hard = resource.getrlimit(res)
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        resource.setrlimit(res, (soft, hard))
        done.append(f"{key}={value}")
    return done


def _leave_network() -> str:
    """A new user and network namespace: no interface but a down loopback. Refused on hosts that
    forbid unprivileged user namespaces; then the child keeps the host's network (said so)."""
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET) != 0:
        return f"network not isolated (unshare: {os.strerror(ctypes.get_errno())})"
    try:
        for path, text in (("/proc/self/setgroups", "deny"), ("/proc/self/uid_map", f"{uid} {uid} 1"),
                           ("/proc/self/gid_map", f"{gid} {gid} 1")):
            with open(path, "w") as f:
                f.write(text)
    except OSError:
        pass
    return "network isolated (own network namespace)"


def _die_with_parent() -> None:
    """SIGKILL when the parent goes: a worker killed by its host (a cancel, a timeout) takes its
    zygote with it, and the zygote its candidate, which would otherwise spin on alone."""
    parent = os.getppid()
    ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent went before the signal was armed
        os._exit(0)


def _become_child(chan: int) -> None:
    os.setsid()  # its own session and process group: the judge kills the group at the end
    os.dup2(chan, CHANNEL_FD)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # prints go to the worker's stderr, never to a protocol stream
    os.closerange(CHANNEL_FD + 1, 1 << 16)  # nothing inherited beyond its own channel
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    ctypes.CDLL(None).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    notes = [_leave_network()]
    notes.append("limits " + ", ".join(_apply_limits(_limits())))
    _die_with_parent()  # armed after the namespace change, which would clear it
    sock = socket.socket(fileno=CHANNEL_FD)
    code = child.main(sock, notes)
    os._exit(code)


# How each child ended, by pid (os.waitpid's status), until the judge asks; the oldest go first.
_ENDED: dict[int, int] = {}
_ENDED_KEPT = 256
STILL_RUNNING = -1000  # the answer for a child not reaped (yet), or unknown


def _reap(_signum=None, _frame=None) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _ENDED[pid] = status
        while len(_ENDED) > _ENDED_KEPT:
            _ENDED.pop(next(iter(_ENDED)))


def _exit_code(pid: int) -> int:
    """The child's exit code, minus the signal that ended it, or STILL_RUNNING."""
    _reap()
    status = _ENDED.pop(pid, None)
    if status is None:
        return STILL_RUNNING
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else STILL_RUNNING


def main() -> None:
    ctl = socket.socket(fileno=int(sys.argv[1]))
    _die_with_parent()
    warm()
    if backend_started():  # forking a started backend's threads is unsafe: start each child cold
        sys.stderr.write("[maxkernel-zygote] warming started the JAX backend; the zygote is not used\n")
        os._exit(0)
    signal.signal(signal.SIGCHLD, _reap)
    ctypes.CDLL(None).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(ctl, 16, 4)
        except OSError:
            os._exit(0)
        if not msg:
            os._exit(0)
        if msg[:1] == b"w" and len(msg) == 9:
            ctl.sendall(struct.pack(">q", _exit_code(struct.unpack(">q", msg[1:])[0])))
            continue
        if not fds:
            continue
        pid = os.fork()
        if pid == 0:
            try:
                ctl.close()
                _become_child(fds[0])
            finally:
                os._exit(70)
        for fd in fds:
            os.close(fd)
        ctl.sendall(struct.pack(">q", pid))


if __name__ == "__main__":
    main()
