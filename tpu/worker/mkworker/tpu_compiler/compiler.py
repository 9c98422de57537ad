"""The TPU compiler on a host without a TPU: compile a program for a TPU generation with libtpu
(deviceless, through jax.experimental.topologies) and read its errors and static cycles.

The public API (for the worker's ops and the kernel generators):

    estimate(fn, arg_specs, generation="v5e", kwargs=None, limits=None, cancelled=None) -> dict
    estimate_exported(exported, generation="v5e", limits=None, cancelled=None) -> dict
    available() -> (bool, reason)

`fn` is a function of arrays (static arguments already bound); `arg_specs` are
jax.ShapeDtypeStruct (or arrays: only shape and dtype are used). The program is exported for
TPU here (jax.export, no libtpu needed) and compiled in a CHILD process (tpu_compiler.compile_child)
that holds libtpu, so that a compile that runs away in time or memory is killed without taking
the worker with it. The result's "status" is one of
  "compiled"     - compiled for the generation; "cycles" (sum of libtpu's static per-op
                   estimates; a matmul or convolution the profile left at 0 counted at XLA's
                   own cost-model estimate, listed in "cost_model_ops"; another op left at 0
                   counted at the bytes it moves at HBM bandwidth, "moved_bytes_ops"; never
                   below its inputs and outputs moved once at HBM bandwidth, "hbm_floor"), "ops",
                   "predicted_s" (cycles / the generation's clock), "clock",
                   "cost_analysis" (XLA's flops / bytes accessed / optimal_seconds), "compile_s",
                   "rss_peak_bytes" (the child's resident memory, sampled), "label"
  "refused"      - the compiler refused the program: "error" (its own text), "error_kind"
                   ("vmem", "hbm", "layout" or "other")
  "too_large"    - over the time or memory limit ("too large to estimate"); the child was killed
                   and is restarted on the next call
  "crashed"      - libtpu ended the child (an abort): "reason" with its log's tail. Where the
                   static profile aborts and a compile without it succeeds, the result is that
                   compile ("compiled" with no cycles, or "refused"), with "profile_crash"
  "cancelled"    - `cancelled()` (a callable) turned true while waiting: the child was killed at
                   once (a compile can run for minutes) and is restarted on the next call
  "unavailable"  - libtpu (or a piece it needs) is missing, or the generation has no topology:
                   "reason"; callers fall back to lowering only (jax.export) and say so
  "export_failed"- the program does not lower for TPU at all: "error"
The cycles are libtpu's static estimates (an internal, undocumented dump flag, pinned with
libtpu 0.0.42.1): a prediction, never a measurement.

Limits: `limits` = {"time_s", "memory_bytes", "log_bytes"}; defaults from MAXKERNEL_TPU_COMPILE_LIMITS (JSON) or
DEFAULT_LIMITS. One warm child per worker process serves every compile (libtpu's start costs a
few seconds); concurrent callers take turns. A child that holds more than RETIRE_BYTES after a
compile (libtpu and the allocator keep a large compile's pages) is retired, so an
idle worker does not hoard gigabytes and the next compile's memory bound measures that compile,
not the ones before it. libtpu's log files go in the child's own folder (removed with it) at
fatal level only; a compile whose logs pass log_bytes is stopped, and a child whose logs pass
half of it is retired. ALLOW_MULTIPLE_LIBTPU_LOAD=1 lets several workers'
children (and a test run's) hold libtpu at once."""

from __future__ import annotations

import importlib.util
import json
import os
import selectors
import shutil
import subprocess
import sys
import tempfile
import threading
import time

GENERATIONS = ("v4", "v5e", "v5p", "v6e")
# libtpu 0.0.42.1's static profile models DMA latency for these only; on v4 it aborts the process
# ("Dma latency model is currently only supported on VF/VL/GF/GL"), so v4 compiles in a child
# without the dump flag and gets no cycles.
PROFILED = ("v5e", "v5p", "v6e")
# log_bytes bounds what libtpu writes to its log files during one compile: some programs make it
# log an internal check failure over and over (an f32 8192^2 matmul + tanh on v5e writes 8 GiB in
# under two minutes at its default log level), which would fill the disk.
DEFAULT_LIMITS = {"time_s": 120.0, "memory_bytes": 8 << 30, "log_bytes": 256 << 20}
START_TIMEOUT_S = 180.0
POLL_S = 0.05
# A warm child is retired after a compile that leaves it holding more than this (with libtpu
# loaded, a child that compiled small programs holds about 0.4-0.6 GiB).
RETIRE_BYTES = 1536 << 20
LIBTPU_PIN = "0.0.42.1"
_CHILD_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compile_child.py")
_GENERATIONS_JSON = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "knowledge",
                                 "data", "tpu_generations.json")


def available() -> tuple[bool, str]:
    """(True, libtpu version) when this host can compile for TPU without one; else (False, why)."""
    if importlib.util.find_spec("libtpu") is None:
        return False, "libtpu is not installed (pip install \"jax[tpu]==0.10.2\")"
    if importlib.util.find_spec("flatbuffers") is None:
        return False, "flatbuffers is not installed (jax.export serialisation needs it)"
    try:
        from importlib.metadata import version
        return True, version("libtpu")
    except Exception:  # noqa: BLE001
        return True, "unknown"


def _generation_row(generation: str) -> dict:
    """The generation's row of knowledge/data/tpu_generations.json ({} where it has none)."""
    try:
        with open(_GENERATIONS_JSON) as f:
            data = json.load(f)
    except OSError:
        return {}
    return next((g for g in data.get("generations", []) if g.get("name") == generation), {})


def clock(generation: str) -> dict | None:
    """{"hz", "source"} for a generation from knowledge/data/tpu_generations.json, or None."""
    g = _generation_row(generation)
    if not g.get("clock_hz"):
        return None
    src = (g.get("sources") or {}).get("clock_hz") or {}
    return {"hz": float(g["clock_hz"]), "source": src.get("url"), "note": src.get("note")}


def hbm_bandwidth(generation: str) -> float | None:
    """A generation's HBM bytes per second from knowledge/data/tpu_generations.json, or None."""
    bw = _generation_row(generation).get("hbm_bandwidth_bytes_per_s")
    return float(bw) if bw else None


def label(generation: str) -> str:
    return f"predicted (TPU compiler, {generation})"


def limits_from(overrides: dict | None = None) -> dict:
    lim = dict(DEFAULT_LIMITS)
    env = os.environ.get("MAXKERNEL_TPU_COMPILE_LIMITS")
    if env:
        try:
            lim.update({k: float(v) for k, v in json.loads(env).items() if k in DEFAULT_LIMITS})
        except (ValueError, AttributeError):
            pass
    if overrides:
        lim.update({k: float(v) for k, v in overrides.items() if k in DEFAULT_LIMITS and v})
    return lim


def error_kind(text: str) -> str:
    t = text.lower()
    if "vmem" in t:
        return "vmem"
    if "hbm" in t or "exceed memory" in t or "out of memory" in t:
        return "hbm"
    if "layout" in t or "tiling" in t or "not implemented" in t or "unsupported" in t:
        return "layout"
    return "other"


def _size(n: float) -> str:
    n = int(n)
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} B"


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class _Child:
    """One libtpu process; killed (and replaced later) when a compile goes over a limit."""

    def __init__(self, profiled: bool, cancelled=None):
        self.dir = tempfile.mkdtemp(prefix="maxkernel-tpu-compile-")
        dump = os.path.join(self.dir, "dump")
        os.mkdir(dump)
        self.tpu_log_dir = os.path.join(self.dir, "tpu_logs")
        os.mkdir(self.tpu_log_dir)
        env = dict(os.environ)
        flag = f" --xla_jf_dump_static_llo_profile_to={dump}" if profiled else ""
        env.update({
            "ALLOW_MULTIPLE_LIBTPU_LOAD": "1",
            "LIBTPU_INIT_ARGS": (env.get("LIBTPU_INIT_ARGS", "") + flag).strip(),
            "MKW_TPU_DUMP_DIR": dump,
            "JAX_PLATFORMS": "cpu",
            # No TPU here: keep libtpu from asking the GCE metadata server who we are.
            "TPU_SKIP_MDS_QUERY": "1",
            "TPU_ACCELERATOR_TYPE": env.get("TPU_ACCELERATOR_TYPE", "v5litepod-1"),
            "TPU_WORKER_HOSTNAMES": "localhost",
            "TPU_WORKER_ID": "0",
            "TF_CPP_MIN_LOG_LEVEL": "2",
            # libtpu logs to /tmp/tpu_logs by default, files that outlive the child; here they
            # go with its folder, and only fatal messages are written unless the user asks.
            "TPU_LOG_DIR": self.tpu_log_dir,
            "TPU_MIN_LOG_LEVEL": env.get("TPU_MIN_LOG_LEVEL", "3"),
        })
        self.log_path = os.path.join(self.dir, "child.log")
        self.log = open(self.log_path, "wb")  # noqa: SIM115 - lives as long as the child
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-u", _CHILD_PATH], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.log, env=env, cwd=self.dir)
        self.buf = b""
        ready, why = self._reply(START_TIMEOUT_S, None, cancelled)
        if not ready or not ready.get("ready"):
            tail = self.log_tail()
            self.close()
            if why and why[0] == "cancelled":
                raise _CancelledStart()
            raise RuntimeError(f"the TPU compiler process did not start: {tail}")
        self.start_s = time.perf_counter() - t0

    def log_tail(self, n: int = 2000) -> str:
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-n:].decode("utf-8", "replace")
        except OSError:
            return ""

    def log_bytes(self) -> int:
        """What the child has written to its logs: libtpu's files and its stderr."""
        total = 0
        for folder, _, files in os.walk(self.tpu_log_dir):
            for name in files:
                try:
                    total += os.lstat(os.path.join(folder, name)).st_size
                except OSError:
                    pass
        try:
            total += os.path.getsize(self.log_path)
        except OSError:
            pass
        return total

    def _reply(self, time_s: float, memory_bytes: float | None, cancelled=None,
               log_bytes: float | None = None):
        """(reply, rss_peak), or (None, (status, reason)) when a limit is hit ("too_large"), the
        child dies ("crashed") or the caller cancels ("cancelled")."""
        deadline = time.monotonic() + time_s
        peak = 0
        fd = self.proc.stdout.fileno()
        sel = selectors.DefaultSelector()
        sel.register(fd, selectors.EVENT_READ)
        try:
            while True:
                if b"\n" in self.buf:
                    line, self.buf = self.buf.split(b"\n", 1)
                    return json.loads(line), peak
                if cancelled is not None and cancelled():
                    return None, ("cancelled", "cancelled by request")
                rss = _rss(self.proc.pid)
                peak = max(peak, rss)
                if memory_bytes and rss > memory_bytes:
                    return None, ("too_large", (f"too large to estimate: over the memory limit "
                                               f"({rss >> 20} MiB > {int(memory_bytes) >> 20} MiB)"))
                if time.monotonic() > deadline:
                    return None, ("too_large", f"too large to estimate: over the time limit ({time_s:g} s)")
                if log_bytes:
                    # A few stat calls a poll: a flood is caught within one poll of the bound.
                    written = self.log_bytes()
                    if written > log_bytes:
                        return None, ("too_large", (
                            f"too large to estimate: libtpu wrote {_size(written)} of logs "
                            f"(limit {_size(log_bytes)}), stopped before it fills the disk"))
                if sel.select(POLL_S):
                    chunk = os.read(fd, 1 << 16)
                    if not chunk:
                        return None, ("crashed", (f"the TPU compiler process ended (exit {self.proc.wait()}): "
                                                 f"{self.log_tail(600)}"))
                    self.buf += chunk
        finally:
            sel.close()

    def compile(self, module_path: str, generation: str, lim: dict,
                cancelled=None) -> tuple[dict | None, object]:
        self.proc.stdin.write((json.dumps({"module": module_path, "generation": generation}) + "\n").encode())
        self.proc.stdin.flush()
        return self._reply(lim["time_s"], lim["memory_bytes"], cancelled, lim.get("log_bytes"))

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class _CancelledStart(Exception):
    """The caller cancelled while libtpu was starting."""


_lock = threading.Lock()
_children: dict[bool, _Child] = {}  # by "profiled" (the dump flag is fixed at libtpu's start)


def shutdown() -> None:
    """Ends the warm compiler processes (tests, worker exit)."""
    with _lock:
        for child in _children.values():
            child.close()
        _children.clear()


def _acquire(cancelled) -> bool:
    """Takes the compiler's lock (one compile at a time per worker), or gives up when the caller
    cancels while another request's compile holds it."""
    while not _lock.acquire(timeout=POLL_S):
        if cancelled is not None and cancelled():
            return False
    return True


def estimate_exported(exported, generation: str = "v5e", limits: dict | None = None,
                      cancelled=None) -> dict:
    """Compiles a jax.export.Exported (made with platforms=["tpu"]) for `generation`. `cancelled`
    (a callable, polled while waiting) stops the wait and kills the compile."""
    try:
        blob = exported.serialize()
    except Exception as e:  # noqa: BLE001
        return {"generation": generation, "compiler": "libtpu", "status": "unavailable",
                "reason": f"cannot serialise the program: {type(e).__name__}: {e}"}
    return estimate_serialized(blob, generation, limits, cancelled)


def estimate_serialized(blob: bytes, generation: str = "v5e", limits: dict | None = None,
                        cancelled=None) -> dict:
    """As estimate_exported, from the program's serialized bytes (a candidate's child exported
    it: the judge hands the bytes to the compiler's process and never deserializes them)."""
    out: dict = {"generation": generation, "compiler": "libtpu"}
    ok, why = available()
    if not ok:
        return {**out, "status": "unavailable", "reason": why}
    out["libtpu"] = why
    if generation not in GENERATIONS:
        return {**out, "status": "unavailable",
                "reason": f"no TPU topology for {generation!r} in libtpu {why} (known: {', '.join(GENERATIONS)})"}
    lim = limits_from(limits)
    res = _estimate_in_child(blob, generation, lim, generation in PROFILED, dict(out), cancelled)
    if res["status"] == "crashed" and generation in PROFILED:
        # libtpu 0.0.42.1's static profile aborts on some programs the compiler itself accepts
        # (a scalar-prefetch copy into SMEM on v5e: "Unsupported DMA direction"). The compile
        # check still stands: compiled again without the profile, with no cycles.
        again = _estimate_in_child(blob, generation, lim, False, dict(out), cancelled)
        with _lock:  # rarely needed: no second libtpu process kept warm for it
            spare = _children.pop(False, None)
        if spare is not None:
            spare.close()
        if again["status"] in ("compiled", "refused"):
            again["profile_crash"] = res.get("reason", "")[:600]
            if again["status"] == "compiled":
                again["cycles_note"] = ("libtpu's static cycle profile aborted on this program; "
                                        "compiled again without it: "
                                        + (again.get("cycles_note") or "no cycles"))
            return again
    return res


def _estimate_in_child(blob: bytes, generation: str, lim: dict, profiled: bool, out: dict,
                       cancelled) -> dict:
    """One compile in the warm child of that kind (with or without the static profile)."""
    waited = time.perf_counter()
    if not _acquire(cancelled):
        return {**out, "status": "cancelled", "reason": "cancelled by request"}
    # The time limit bounds the compile itself; the wait for another request's compile and
    # libtpu's start (START_TIMEOUT_S) come before it and are reported beside it.
    out["wait_s"] = time.perf_counter() - waited
    try:
        child = _children.get(profiled)
        if child is not None and child.proc.poll() is not None:
            child.close()
            child = None
        if child is None:
            try:
                child = _children[profiled] = _Child(profiled, cancelled)
                out["start_s"] = child.start_s
            except _CancelledStart:
                _children.pop(profiled, None)
                return {**out, "status": "cancelled", "reason": "cancelled by request"}
            except Exception as e:  # noqa: BLE001
                _children.pop(profiled, None)
                return {**out, "status": "unavailable", "reason": str(e)[:2000]}
        path = os.path.join(child.dir, "module.bin")
        with open(path, "wb") as f:
            f.write(blob)
        t0 = time.perf_counter()
        reply, extra = child.compile(path, generation, lim, cancelled)
        wall = time.perf_counter() - t0
        if reply is None:
            # Over a limit, dead or cancelled: the child (and whatever it allocated) goes; the
            # next call starts a fresh one.
            child.close()
            _children.pop(profiled, None)
            status, reason = extra
            before = out["wait_s"] + out.get("start_s", 0.0)
            if status == "too_large" and before >= 1.0:
                reason += (f"; before the compile: {out['wait_s']:.0f} s waiting for this worker's "
                           f"compiler, {out.get('start_s', 0.0):.0f} s starting libtpu")
            return {**out, "status": status, "reason": reason, "limits": lim, "wall_s": wall}
        logs_full = lim.get("log_bytes") and child.log_bytes() > lim["log_bytes"] / 2
        if _rss(child.proc.pid) > RETIRE_BYTES or logs_full:
            child.close()
            _children.pop(profiled, None)
    finally:
        _lock.release()
    out["wall_s"] = wall
    out["rss_peak_bytes"] = extra
    return result_of(reply, generation, profiled, out)


# The cost model whose per-op estimate stands in for a matmul or convolution the static profile
# left at 0 (XLA's convolution emitter's; its other models are far off: 3-17x the profile on
# copies and reductions, bench/RESULTS.md).
STAND_IN_MODEL = "CLASSIC"


def _stand_ins(uncounted: list[str], cost_model: dict) -> dict[str, int]:
    """XLA's own estimate for each compute op the static profile gave 0 cycles, where its
    convolution cost model made one."""
    out = {}
    for op in uncounted:
        entry = cost_model.get(op)
        if isinstance(entry, (list, tuple)) and len(entry) == 2 and entry[1] == STAND_IN_MODEL \
                and isinstance(entry[0], int) and entry[0] > 0:
            out[op] = entry[0]
    return out


def _without_profile(reply: dict, compute: set, generation: str) -> tuple[dict, dict, list]:
    """(stand-ins, moved, uncounted) for a program compiled without the static profile: each op
    XLA gave an estimate of in its backend_config, a convolution or matmul at XLA's convolution
    model (1-8 % from the profile on plain ones) and any other op at the bytes it moves at HBM
    bandwidth (XLA's other model is 1.7-17x off; the bytes are a floor, so XLA's program is not
    made slower than it is)."""
    model = reply.get("cost_model") or {}
    ops = sorted(model)
    matmuls = [op for op in ops if op in compute]
    stand_ins = _stand_ins(matmuls, model)
    others = [op for op in ops if op not in compute]
    moved = _moved_bytes_stand_ins(others, compute, reply.get("op_bytes") or {}, generation)
    return stand_ins, moved, [op for op in matmuls if op not in stand_ins]


def _moved_bytes_stand_ins(zero: list[str], compute: set, op_bytes: dict, generation: str) -> dict[str, int]:
    """Cycles for each op the static profile gave 0 that computes no matmul (a copy, a pad, a
    transpose: libtpu 0.0.42.1 leaves some of these at 0 too): the bytes it reads and writes at
    the generation's HBM bandwidth, never less than a move of that size takes. Without them a
    program could hide a full pass over its data in a "free" copy."""
    clk, bw = clock(generation), hbm_bandwidth(generation)
    if not clk or not bw:
        return {}
    return {op: max(1, round(op_bytes[op] / bw * clk["hz"])) for op in zero
            if op not in compute and isinstance(op_bytes.get(op), int) and op_bytes[op] > 0}


def _hbm_floor(io_bytes, generation: str) -> int | None:
    """Cycles that moving `io_bytes` at the generation's HBM bandwidth takes, or None."""
    clk, bw = clock(generation), hbm_bandwidth(generation)
    if not clk or not bw or not isinstance(io_bytes, int) or io_bytes <= 0:
        return None
    return round(io_bytes / bw * clk["hz"])


def result_of(reply: dict, generation: str, profiled: bool, out: dict) -> dict:
    """The compile's record from the child's reply: refused, or compiled with the static cycles
    summed (or a note saying why there are none)."""
    if not reply.get("ok"):
        err = reply.get("error", "")
        return {**out, "status": "refused", "error": err, "error_kind": error_kind(err)}
    cycles = dict(reply.get("cycles") or {})
    out.update(status="compiled", compile_s=reply.get("compile_s"), device_kind=reply.get("device_kind"),
               cost_analysis=reply.get("cost_analysis") or {}, ops=dict(cycles), label=label(generation))
    zero = sorted(op for op, c in cycles.items() if not c)
    # Ops that compute a convolution or a matmul but got 0 cycles: libtpu's static profile
    # leaves some of XLA's convolution fusions out (its DMA model has no "general" DMA, which
    # those fusions use; 0.0.51 aborts on them instead), and a sum without the program's main
    # work is no estimate of it. Where XLA's convolution cost model estimated the op, that
    # estimate stands in, named in the record; otherwise there is no estimate.
    compute = set(reply.get("compute_ops") or ())
    uncounted = [op for op in zero if op in compute]
    stand_ins = _stand_ins(uncounted, reply.get("cost_model") or {})
    uncounted = [op for op in uncounted if op not in stand_ins]
    moved = _moved_bytes_stand_ins(zero, compute, reply.get("op_bytes") or {}, generation)
    # A retry after the static profile aborted: every op XLA estimated, from the same two
    # stand-ins (see _without_profile); a matmul with no convolution-model estimate leaves the
    # program with none. Never for a program with a custom call (a Pallas kernel): XLA has no
    # estimate of its work, and its bytes alone would make a compute-bound kernel look free.
    without_profile = (not cycles and not profiled and generation in PROFILED
                       and not reply.get("custom_calls") and "custom_calls" in reply)
    if without_profile:
        stand_ins, moved, uncounted = _without_profile(reply, compute, generation)
    if zero:
        out["zero_cycle_ops"] = zero
    if stand_ins:
        out["cost_model_ops"] = stand_ins
        cycles.update(stand_ins)
    if moved:
        out["moved_bytes_ops"] = moved
        cycles.update(moved)
    if uncounted:
        out["uncounted_compute_ops"] = uncounted
    if cycles and sum(cycles.values()) <= 0:
        out["cycles_note"] = ("libtpu's static profile gave 0 cycles for every op of this program: "
                              "no estimate")
    elif uncounted and without_profile:
        out["cycles_note"] = (f"XLA's convolution model has no estimate for {', '.join(uncounted)}, "
                              "which computes a convolution or matmul: no estimate")
    elif uncounted:
        out["cycles_note"] = (f"libtpu's static profile gave 0 cycles for {', '.join(uncounted)}, "
                              "which computes a convolution or matmul: the sum would leave out "
                              "that work, so no estimate")
    elif cycles:
        total = sum(cycles.values())
        notes = []
        floor = _hbm_floor(reply.get("io_bytes"), generation)
        if floor and total < floor:
            # libtpu's static profile does not hold DMA to HBM bandwidth (a Pallas scale kernel
            # and XLA's fusion of the same got about half the cycles their bytes need): no
            # program finishes before it has read its inputs and written its outputs once.
            out["hbm_floor"] = {"cycles": floor, "profile_cycles": total, "io_bytes": reply["io_bytes"]}
            notes.append(f"the static profile's {total} cycles are fewer than reading the inputs "
                         f"and writing the outputs once at HBM bandwidth takes: counted at {floor}")
            total = floor
        out["cycles"] = total
        if without_profile:
            notes.insert(0, "XLA's own cost-model estimate for "
                         + (", ".join(stand_ins) or "no matmul") + " and the bytes "
                         + (", ".join(moved) or "no other op") + " move at HBM bandwidth")
        elif stand_ins:
            notes.append(f"libtpu's static profile gave 0 cycles for {', '.join(stand_ins)} (a "
                         "convolution or matmul): XLA's own cost-model estimate "
                         f"({', '.join(str(c) for c in stand_ins.values())} cycles) stands in")
        if moved and not without_profile:
            notes.append(f"{', '.join(moved)} got 0 cycles in the static profile: counted at "
                         "the bytes they move at HBM bandwidth")
        if notes:
            out["cycles_note"] = "; ".join(notes)
        clk = clock(generation)
        if clk:
            out["clock"] = clk
            out["predicted_s"] = total / clk["hz"]
    elif generation not in PROFILED:
        out["cycles_note"] = f"libtpu's static profile does not cover {generation}: no cycles"
    elif profiled:
        out["cycles_note"] = "libtpu wrote no static cycle profile (flag unsupported in this libtpu?)"
    # (not profiled on a profiled generation: a retry after the profile aborted; the caller says so)
    return out


def export_for_tpu(fn, arg_specs, kwargs=None):
    import jax
    specs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in arg_specs]
    kspecs = {k: jax.ShapeDtypeStruct(v.shape, v.dtype) for k, v in (kwargs or {}).items()}
    jitted = fn if hasattr(fn, "lower") else jax.jit(fn)
    return jax.export.export(jitted, platforms=["tpu"])(*specs, **kspecs)


def estimate(fn, arg_specs, generation: str = "v5e", kwargs=None, limits: dict | None = None,
             cancelled=None) -> dict:
    """Exports `fn` at `arg_specs` for TPU and compiles it for `generation` (see the module doc)."""
    ok, why = available()
    if not ok:
        return {"generation": generation, "status": "unavailable", "reason": why}
    try:
        exported = export_for_tpu(fn, arg_specs, kwargs)
    except Exception as e:  # noqa: BLE001
        return {"generation": generation, "status": "export_failed", "error": f"{type(e).__name__}: {e}"[:8000]}
    return estimate_exported(exported, generation, limits, cancelled)
