#!/usr/bin/env python3
"""MaxKernel host worker: JSON lines over stdin/stdout (protocol version 1).

Run as `python maxkernel_worker.py` or `python -m maxkernel_worker` (with
this directory on sys.path).  One JSON object per line each way; all logs
and every print of user code go to stderr.  See docs/worker-protocol.md.

Threads: the main thread reads requests and answers hello/cancel/shutdown
at once; lower/evaluate/profile/autotune run one at a time on an op
thread; a writer thread owns the protocol stream, so no op ever blocks on
stdout.  Only the standard library and JAX (with numpy) are imported.
"""

from __future__ import annotations

import io
import json
import math
import os
import platform as _platform
import queue
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from mkworker import common as C

PROTOCOL_VERSION = 1
WORKER_VERSION = "0.1.0"
QUEUED_OPS = ("lower", "evaluate", "profile", "autotune", "generate", "reference")
INLINE_OPS = ("hello", "cancel", "shutdown")

_LOG_LEVEL = os.environ.get("MAXKERNEL_WORKER_LOG", "info").lower()


def log(msg: str, level: str = "info"):
    if level == "debug" and _LOG_LEVEL != "debug":
        return
    try:
        sys.__stderr__.write(f"[maxkernel-worker {os.getpid()}] {msg}\n")
        sys.__stderr__.flush()
    except Exception:  # noqa: BLE001, S110
        pass


# ---------------------------------------------------------------------------
# stdio: the protocol owns private copies of fds 0/1; fd 1 is pointed at
# stderr and fd 0 at /dev/null, so prints (Python or C) and input() in user
# code can never corrupt the stream.

def take_over_stdio():
    sys.stdout.flush()
    out_fd = os.dup(1)
    in_fd = os.dup(0)
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    proto_out = os.fdopen(out_fd, "wb")
    proto_in = os.fdopen(in_fd, "rb")
    sys.stdout = sys.stderr
    sys.stdin = io.StringIO("")
    return proto_in, proto_out


def jsonable(obj):
    """Plain JSON values: numpy scalars -> Python, non-finite floats ->
    null, tuples -> lists, anything else unknown -> str."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    item = getattr(obj, "item", None)
    if callable(item) and getattr(obj, "shape", None) == ():
        try:
            return jsonable(item())
        except Exception:  # noqa: BLE001, S110
            pass
    return str(obj)


class Writer:
    """Owns the protocol stream; send() never blocks the caller."""

    def __init__(self, stream):
        self._stream = stream
        self._q: queue.Queue = queue.Queue()
        self._t = threading.Thread(target=self._loop, name="mk-writer", daemon=True)
        self._t.start()

    def send(self, obj: dict):
        self._q.put(obj)

    def _loop(self):
        while True:
            obj = self._q.get()
            if obj is None:
                return
            try:
                line = json.dumps(jsonable(obj), allow_nan=False, separators=(",", ":"))
            except Exception as e:  # noqa: BLE001
                line = json.dumps({"id": jsonable(obj.get("id")) if isinstance(obj, dict) else None,
                                   "ok": False,
                                   "error": {"kind": C.INTERNAL, "message": f"unserialisable response: {e}"}})
            try:
                self._stream.write(line.encode("utf-8") + b"\n")
                self._stream.flush()
            except (BrokenPipeError, OSError, ValueError):
                log("protocol stream closed; dropping output")
                return

    def close(self, timeout: float = 5.0):
        self._q.put(None)
        self._t.join(timeout)


# ---------------------------------------------------------------------------
# Resource limits.

_LIMIT_KEYS = {
    # request key: (resource name, multiplier)
    "address_space_bytes": ("RLIMIT_AS", 1),
    "address_space_mb": ("RLIMIT_AS", 1 << 20),
    "cpu_seconds": ("RLIMIT_CPU", 1),
    "file_size_bytes": ("RLIMIT_FSIZE", 1),
    "file_size_mb": ("RLIMIT_FSIZE", 1 << 20),
    "nproc": ("RLIMIT_NPROC", 1),
    "open_files": ("RLIMIT_NOFILE", 1),
}
DEFAULT_LIMITS = {"file_size_mb": 1024}


def apply_limits(limits: dict) -> list[str]:
    """Lowers soft limits (raising them up to the hard limit is allowed);
    returns error strings for those that could not be applied."""
    import resource
    errors = []
    if not isinstance(limits, dict):
        return ["limits must be an object"]
    for key, value in limits.items():
        if key not in _LIMIT_KEYS:
            errors.append(f"unknown limit {key!r}")
            continue
        if value is None:
            continue
        rname, mult = _LIMIT_KEYS[key]
        res = getattr(resource, rname, None)
        if res is None:
            errors.append(f"{rname} is not available on this system")
            continue
        try:
            soft = int(value) * mult
            _, hard = resource.getrlimit(res)
            if hard != resource.RLIM_INFINITY and soft > hard:
                soft = hard
            resource.setrlimit(res, (soft, hard))
        except (ValueError, OSError, TypeError) as e:
            errors.append(f"{key}: {e}")
    return errors


def current_limits() -> dict:
    import resource
    out = {}
    for name, rname in (("address_space_bytes", "RLIMIT_AS"), ("cpu_seconds", "RLIMIT_CPU"),
                        ("file_size_bytes", "RLIMIT_FSIZE"), ("nproc", "RLIMIT_NPROC"),
                        ("open_files", "RLIMIT_NOFILE")):
        res = getattr(resource, rname, None)
        if res is None:
            continue
        soft, _ = resource.getrlimit(res)
        out[name] = None if soft == resource.RLIM_INFINITY else int(soft)
    return out


# ---------------------------------------------------------------------------
# The server.

class Server:
    def __init__(self, proto_in, proto_out, workdir: str):
        self.inp = proto_in
        self.writer = Writer(proto_out)
        self.workdir = workdir
        self.ops_q: queue.Queue = queue.Queue()
        self.lock = threading.Lock()
        self.current = None  # (id, CancelToken, op)
        self.pending: dict = {}  # id -> CancelToken of queued ops
        self.limit_errors: list[str] = []
        self.lane: str | None = None  # "compile" or "timing" when the host said (--lane)
        self.op_thread = threading.Thread(target=self._op_loop, name="mk-ops", daemon=True)
        self.op_thread.start()
        self._ops = None
        # Clear JAX's compilation caches every N ops: keeping them lets the task's reference and
        # input generation compile once for many candidates; clearing now and then bounds memory.
        try:
            self.clear_every = max(0, int(os.environ.get("MAXKERNEL_WORKER_CLEAR_CACHES", "16")))
        except ValueError:
            self.clear_every = 16
        self.ops_since_clear = 0

    # -- responses
    def reply(self, rid, **fields):
        msg = {"id": rid, "ok": True}
        msg.update(fields)
        self.writer.send(msg)

    def fail(self, rid, kind, message, **extra):
        err = {"kind": kind, "message": message}
        err.update(extra)
        self.writer.send({"id": rid, "ok": False, "error": err})

    # -- main loop
    def serve(self) -> int:
        while True:
            try:
                raw = self.inp.readline()
            except (OSError, ValueError):
                raw = b""
            if not raw:
                log("stdin closed; exiting")
                return self.shutdown(None, grace=2.0)
            line = raw.strip()
            if not line:
                continue
            try:
                rc = self.handle(line)
            except Exception as e:  # noqa: BLE001 - the loop must keep serving
                log(f"internal error handling a request: {e!r}")
                self.fail(None, C.INTERNAL, f"{type(e).__name__}: {e}")
                continue
            if rc is not None:
                return rc

    def handle(self, line: bytes):
        try:
            req = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            self.fail(None, C.PROTOCOL, f"malformed JSON line: {e}")
            return None
        if not isinstance(req, dict):
            self.fail(None, C.PROTOCOL, "a request must be a JSON object")
            return None
        rid = req.get("id")
        if "id" not in req or isinstance(rid, bool) or not isinstance(rid, (int, str)):
            self.fail(None, C.PROTOCOL, "a request needs an `id` (integer or string)")
            return None
        op = req.get("op")
        if not isinstance(op, str):
            self.fail(rid, C.PROTOCOL, "a request needs an `op` (string)")
            return None
        if op == "hello":
            self._hello(rid, req)
        elif op == "cancel":
            self._cancel(rid, req)
        elif op == "shutdown":
            grace = req.get("grace_s", 5.0)
            if isinstance(grace, bool) or not isinstance(grace, (int, float)):
                grace = 5.0
            return self.shutdown(rid, grace=float(grace))
        elif op in QUEUED_OPS:
            token = C.CancelToken()
            with self.lock:
                self.pending[rid] = token
            self.ops_q.put((rid, op, req, token))
        else:
            self.fail(rid, C.UNKNOWN_OP, f"unknown op {op!r}",
                      supported=list(INLINE_OPS + QUEUED_OPS))
        return None

    # -- inline ops
    def _hello(self, rid, req):
        pv = req.get("protocol_version")
        if pv is not None and pv != PROTOCOL_VERSION:
            self.fail(rid, C.PROTOCOL, f"unsupported protocol_version {pv!r}",
                      supported_versions=[PROTOCOL_VERSION], protocol_version=PROTOCOL_VERSION)
            return
        errors = []
        if req.get("limits") is not None:
            errors = apply_limits(req["limits"])
        try:
            import jax
            import jaxlib
            from mkworker.judge import run
            info = run.device_info()
            jax_v = jax.__version__
            jaxlib_v = getattr(jaxlib, "__version__", None)
        except Exception as e:  # noqa: BLE001
            self.fail(rid, C.INTERNAL, f"JAX is not usable: {type(e).__name__}: {e}",
                      traceback=traceback.format_exc())
            return
        self.reply(rid, protocol_version=PROTOCOL_VERSION, worker_version=WORKER_VERSION,
                   python=_platform.python_version(), jax=jax_v, jaxlib=jaxlib_v,
                   **info,
                   interpret=info["platform"] != "tpu",
                   pid=os.getpid(), workdir=self.workdir, nice=os.nice(0), lane=self.lane,
                   ops=list(INLINE_OPS + QUEUED_OPS),
                   limits=current_limits(),
                   limit_errors=self.limit_errors + errors)

    def _cancel(self, rid, req):
        target = req.get("target_id")
        state = "unknown"
        with self.lock:
            if self.current is not None and self.current[0] == target:
                self.current[1].cancel()
                state = "running"
            elif target in self.pending:
                self.pending[target].cancel()
                state = "queued"
        self.reply(rid, target_id=target, state=state, cancelled=state != "unknown")

    def shutdown(self, rid, grace: float) -> int:
        with self.lock:
            if self.current is not None:
                self.current[1].cancel()
            for tok in self.pending.values():
                tok.cancel()
        self.ops_q.put(None)
        self.op_thread.join(max(0.0, grace))
        if self.op_thread.is_alive():
            log("an op did not stop within the grace period; exiting anyway")
        if rid is not None:
            self.reply(rid, shutting_down=True)
        self.writer.close()
        return 0

    # -- op thread
    def _op_loop(self):
        while True:
            item = self.ops_q.get()
            if item is None:
                return
            rid, op, req, token = item
            with self.lock:
                self.pending.pop(rid, None)
                self.current = (rid, token, op)
            t0 = time.perf_counter()
            try:
                if token.cancelled:
                    raise C.Cancelled("cancelled before it started")
                if self._ops is None:
                    from mkworker import scratch
                    scratch.WORKDIR["path"] = self.workdir
                    from mkworker.ops import (
                        autotune,
                        evaluate,
                        generate,
                        lower,
                        profile,
                        reference,
                    )
                    self._ops = {"lower": lower.op_lower, "evaluate": evaluate.op_evaluate,
                                 "profile": profile.op_profile, "autotune": autotune.op_autotune,
                                 "generate": generate.op_generate,
                                 "reference": reference.op_reference}
                progress = C.Progress(self.writer.send, rid, op)
                result = self._ops[op](req, token, progress)
                result["elapsed_s"] = time.perf_counter() - t0
                self.reply(rid, **result)
            except C.WorkerError as e:
                body = e.to_json()
                top = {}
                for k in ("lowered", "pallas_calls"):
                    if k in body:
                        top[k] = body.pop(k)
                msg = {"id": rid, "ok": False, "error": body, "elapsed_s": time.perf_counter() - t0}
                msg.update(top)
                self.writer.send(msg)
            except BaseException as e:
                if isinstance(e, KeyboardInterrupt):
                    raise
                self.fail(rid, C.INTERNAL, f"{type(e).__name__}: {e}",
                          traceback=traceback.format_exc()[-20000:])
            finally:
                with self.lock:
                    self.current = None
                self.ops_since_clear += 1
                if self.clear_every and self.ops_since_clear >= self.clear_every:
                    self.ops_since_clear = 0
                    try:
                        import jax
                        jax.clear_caches()
                    except Exception:  # noqa: BLE001, S110
                        pass

                sys.stdout = sys.stderr  # in case user code replaced it


def lower_priority(argv) -> str | None:
    """Applies `--nice N` (the host's workerNice): a worker on the editor's machine must not
    slow down the language server. Returns a problem to log, or None."""
    if "--nice" not in argv:
        return None
    index = argv.index("--nice")
    try:
        increment = int(argv[index + 1])
    except (IndexError, ValueError):
        return "--nice needs an integer"
    if increment > 0:
        try:
            os.nice(increment)
        except OSError as e:
            return f"cannot lower the priority: {e}"
    return None


LANES = ("compile", "timing")


def take_lane(argv) -> tuple[str | None, str | None]:
    """Applies `--lane compile|timing` before JAX is imported; returns (lane, problem).

    A compile worker runs JAX on the CPU only: Pallas lowers for TPU without a TPU (the
    cross-platform export), and a TPU admits one process at a time (libtpu's lock), so a
    compile worker that initialised the chip would take it from the host's timing worker and
    leave the timings to a CPU fallback; on a GPU it would take most of the device's memory.
    Only the timing worker touches the device."""
    if "--lane" not in argv:
        return None, None
    index = argv.index("--lane")
    lane = argv[index + 1] if index + 1 < len(argv) else None
    if lane not in LANES:
        return None, f"--lane needs one of {', '.join(LANES)}"
    if lane == "compile":
        os.environ["JAX_PLATFORMS"] = "cpu"
    return lane, None


def keep_libtpu_for_compiles() -> str | None:
    """With libtpu installed (for the TPU compiler, tpu_compiler.compiler) but no TPU attached, JAX
    would load libtpu in the worker itself: seconds of start, metadata warnings and libtpu's
    machine-wide lock. Then the worker runs on the CPU, as it did before libtpu was installed;
    only the compiler's child process loads libtpu. A GPU plugin or an explicit JAX_PLATFORMS
    is left alone."""
    import glob
    import importlib.util

    if os.environ.get("JAX_PLATFORMS") or importlib.util.find_spec("libtpu") is None:
        return None
    if glob.glob("/dev/accel*") or glob.glob("/dev/vfio/[0-9]*"):
        return None  # a TPU is attached: JAX uses it
    if any(importlib.util.find_spec(m) for m in ("jax_cuda12_plugin", "jax_cuda13_plugin", "jax_rocm60_plugin")):
        return None
    os.environ["JAX_PLATFORMS"] = "cpu"
    return "libtpu is installed but no TPU is attached: JAX runs on the CPU (libtpu only compiles, in a child)"


def not_dumpable() -> None:
    """No other process of this user (a candidate's child above all) may open this one's
    /proc/<pid>/fd or memory: the protocol pipes are reachable there (issue 36)."""
    try:
        import ctypes
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
    except (OSError, AttributeError):
        pass


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    nice_problem = lower_priority(argv)
    lane, lane_problem = take_lane(argv)
    libtpu_note = keep_libtpu_for_compiles()
    proto_in, proto_out = take_over_stdio()
    not_dumpable()
    workdir = tempfile.mkdtemp(prefix="maxkernel-worker-")
    os.chdir(workdir)
    limit_errors = apply_limits(DEFAULT_LIMITS)
    env_limits = os.environ.get("MAXKERNEL_WORKER_LIMITS")
    if env_limits:
        try:
            limit_errors += apply_limits(json.loads(env_limits))
        except json.JSONDecodeError as e:
            limit_errors.append(f"MAXKERNEL_WORKER_LIMITS is not JSON: {e}")
    log(f"started; workdir {workdir}; protocol {PROTOCOL_VERSION}; nice {os.nice(0)}")
    if nice_problem:
        log(nice_problem)
    if lane_problem:
        log(lane_problem)
    if libtpu_note:
        log(libtpu_note)

    def on_terminate(signum, _frame):
        # The host asks politely before it kills: leave no scratch directory behind.
        if os.environ.get("MAXKERNEL_WORKER_KEEP_WORKDIR") != "1":
            os.chdir("/")
            shutil.rmtree(workdir, ignore_errors=True)
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, on_terminate)

    server = Server(proto_in, proto_out, workdir)
    server.limit_errors = limit_errors
    server.lane = lane
    rc = 0
    try:
        rc = server.serve()
    finally:
        if os.environ.get("MAXKERNEL_WORKER_KEEP_WORKDIR") != "1":
            os.chdir("/")
            shutil.rmtree(workdir, ignore_errors=True)
        try:
            sys.__stderr__.flush()
        except Exception:  # noqa: BLE001, S110
            pass
    # Skip interpreter teardown: user threads or JAX atexit hooks must not
    # keep a finished worker alive.
    os._exit(rc)


if __name__ == "__main__":
    main()
