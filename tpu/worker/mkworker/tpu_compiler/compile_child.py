"""The child process that compiles exported programs for a TPU generation with libtpu, on a host
without a TPU (tpu_compiler.compiler starts it; never imported by the worker).

It loads libtpu once (its start costs seconds) and serves compiles until its stdin closes.
Protocol: the parent writes one JSON line per request,
  {"module": PATH, "generation": "v5e"}
where PATH holds `jax.export.Exported.serialize()` bytes; the child answers one JSON line on its
private copy of stdout: {"ok": true, "cycles": {op: cycles}, "cost_analysis": {...}, "compile_s",
"compute_ops": [the ops that compute a convolution or matmul],
"cost_model": {op: [cycles, model]} (XLA's own per-op estimate in the compiled HLO),
"op_bytes": {op: bytes its operands and result hold},
"io_bytes": bytes of the program's inputs and outputs,
"custom_calls": [the top-level ops that are custom calls]}
or {"ok": false, "error": text, "error_type": name}. Everything libtpu prints goes to stderr.

The static cycle dump (--xla_jf_dump_static_llo_profile_to, read once when libtpu starts) is an
internal libtpu flag: the parent pins libtpu and treats an empty dump as "no cycles"."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import threading
import time

# The topology of each generation (names libtpu 0.0.42 accepts; v7x is refused).
TOPOLOGIES = {"v4": "v4:2x2x1", "v5e": "v5e:1x1", "v5p": "v5p:2x2x1", "v6e": "v6e:1x1"}


def _protocol_out():
    """A private duplicate of stdout for replies; fd 1 then points at stderr so that anything
    libtpu or JAX prints cannot corrupt the protocol."""
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    return out


def _read_cycles(dump_dir: str) -> dict[str, int]:
    cycles = {}
    for name in sorted(os.listdir(dump_dir)):
        if not name.endswith("_static_llo_profile.textproto"):
            continue
        op = name[: -len("_static_llo_profile.textproto")]
        with open(os.path.join(dump_dir, name)) as f:
            for line in f:
                line = line.strip()
                if line.startswith("estimated_cycles:"):
                    cycles[op] = cycles.get(op, 0) + int(line.split(":", 1)[1])
    return cycles


_COMPUTE = re.compile(r"\b(?:convolution|dot)\(")
_CALLED = re.compile(r"(?:calls|to_apply|body|condition|branch_computations)=\{?([^}=]*)")
_NAME = re.compile(r"%?([\w.\-]+)")


def _compute_ops(hlo: str) -> list[str]:
    """The top-level ops of the compiled program (by the names the static profile uses) that
    compute a convolution or a matmul, directly or in a computation they call: the ops whose
    0 cycles would mean the profile left out the program's main work."""
    bodies, entry, current = {}, None, None
    for line in hlo.splitlines():
        if line and not line[0].isspace() and line.rstrip().endswith("{"):
            head = line.split("(", 1)[0].split()
            current = head[-1].lstrip("%") if head else None
            bodies[current] = []
            if line.startswith("ENTRY"):
                entry = current
        elif line.startswith("}"):
            current = None
        elif current is not None and "=" in line:
            bodies[current].append(line)

    def called(text):
        return [n for m in _CALLED.finditer(text) for n in _NAME.findall(m.group(1))]

    heavy = {c for c, lines in bodies.items() if any(_COMPUTE.search(t) for t in lines)}
    grew = True
    while grew:  # a computation that calls a heavy one is heavy
        grew = False
        for c, lines in bodies.items():
            if c not in heavy and any(n in heavy for t in lines for n in called(t)):
                heavy.add(c)
                grew = True
    ops = []
    for t in bodies.get(entry, []):
        name = _NAME.match(t.strip().removeprefix("ROOT").strip())
        if name and (_COMPUTE.search(t) or any(n in heavy for n in called(t))):
            ops.append(name.group(1))
    return ops


_ESTIMATE = re.compile(r'"estimated_cycles":"(\d+)"')
_MODEL = re.compile(r'"cost_model_type":"COST_MODEL_TYPE_(\w+)"')


def _cost_model(hlo: str) -> dict[str, list]:
    """XLA's own cycle estimate per top-level op of the compiled program: the TPU backend writes
    it in each op's backend_config ("estimated_cycles", with the model that made it, "CLASSIC"
    for its convolution emitter's tiling). It is the compiler's estimate before scheduling, not
    the static profile's; the parent uses it only where the profile left a matmul at 0."""
    out = {}
    for text in _entry_instructions(hlo):
        cyc = _ESTIMATE.search(text)
        name = _NAME.match(text)
        if cyc and name:
            model = _MODEL.search(text)
            out[name.group(1)] = [int(cyc.group(1)), model.group(1) if model else "UNKNOWN"]
    return out


_ARRAY = re.compile(r"\b(pred|s4|s8|s16|s32|s64|u4|u8|u16|u32|u64|bf16|f16|f32|f64|f8e\w*)\[([\d,]*)\]")
_BITS = {"pred": 8, "s4": 4, "u4": 4, "s8": 8, "u8": 8, "s16": 16, "u16": 16, "bf16": 16, "f16": 16,
         "s32": 32, "u32": 32, "f32": 32, "s64": 64, "u64": 64, "f64": 64}
_OPERANDS = re.compile(r"%([\w.\-]+)")
# The opcode and its operand list: `... copy(%fusion.2), metadata=...` (a layout's T(8,128) is
# not a call: its parentheses hold no %name)
_CALL = re.compile(r"\s([a-z][\w\-]*)\(((?:%[\w.\-]+(?:, )?)*)\)")


def _array_bytes(text: str) -> int:
    """The bytes of the arrays a shape text names (a tuple's elements summed)."""
    total = 0
    for dtype, dims in _ARRAY.findall(text):
        n = 1
        for d in dims.split(","):
            if d:
                n *= int(d)
        total += n * _BITS.get(dtype, 8) // 8
    return total


def _op_bytes(hlo: str) -> dict[str, int]:
    """Per top-level op of the compiled program: the bytes of its result and of its operands
    (what a copy or a loop fusion moves through HBM at least once)."""
    shapes, ops = {}, {}
    for text in _entry_instructions(hlo):
        if " = " not in text:
            continue
        name, rest = text.split(" = ", 1)
        name = name.lstrip("%")
        call = _CALL.search(rest)
        shapes[name] = _array_bytes(rest[:call.start()] if call else rest.split(" ", 1)[0])
        args = call.group(2) if call else ""
        ops[name] = shapes[name] + sum(shapes.get(a, 0) for a in _OPERANDS.findall(args))
    return ops


def _entry_instructions(hlo: str):
    """Each instruction line of the compiled program's entry computation, without `ROOT`."""
    entry = hlo.split("\nENTRY ", 1)
    if len(entry) < 2:
        return
    for line in entry[1].splitlines()[1:]:
        if line.startswith("}"):
            return
        yield line.strip().removeprefix("ROOT").strip()


def _custom_calls(hlo: str) -> list[str]:
    """The top-level ops of the compiled program that are custom calls (a Pallas kernel is one)."""
    # (not _CALL: a custom call's operand list may hold more than %names)
    return [text.split(" = ", 1)[0].lstrip("%") for text in _entry_instructions(hlo)
            if " = " in text and " custom-call(" in text]


def _io_bytes(exported) -> int:
    """The bytes of the program's inputs and outputs: what it reads and writes at least once."""
    total = 0
    for aval in list(exported.in_avals) + list(exported.out_avals):
        n = 1
        for d in aval.shape:
            n *= int(d)
        total += n * aval.dtype.itemsize
    return total


def _clear(dump_dir: str) -> None:
    for name in os.listdir(dump_dir):
        try:
            os.remove(os.path.join(dump_dir, name))
        except OSError:
            pass


def _cost_analysis(compiled) -> dict:
    try:
        ca = compiled.cost_analysis()
    except Exception:  # noqa: BLE001 - cost analysis is optional
        return {}
    if isinstance(ca, (list, tuple)):
        ca = ca[0] if ca else {}
    keep = ("flops", "bytes accessed", "transcendentals", "optimal_seconds")
    return {k: float(v) for k, v in (ca or {}).items() if k in keep}


def _remove_own_folder() -> None:
    """The parent made this process's working folder (the program, the dump, libtpu's logs) and
    removes it when it ends the child; a parent that was killed cannot, so the child does."""
    here = os.getcwd()
    if os.path.basename(here).startswith("maxkernel-tpu-compile-"):
        shutil.rmtree(here, ignore_errors=True)


def _exit_with_parent() -> None:
    """A compile can run for minutes: when the worker is gone, nobody would bound it, so stop."""
    parent = os.getppid()

    def watch():
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                _remove_own_folder()
                os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def main() -> int:
    _exit_with_parent()
    dump_dir = os.environ["MKW_TPU_DUMP_DIR"]
    out = _protocol_out()
    import jax

    jax.config.update("jax_platforms", "cpu")
    # Cycles come from the dump a real compile writes: an executable loaded from a persistent
    # compilation cache (JAX_COMPILATION_CACHE_DIR, which the test script sets) would write none.
    jax.config.update("jax_enable_compilation_cache", False)
    from jax.experimental import topologies

    devices = {}

    def device(gen):
        if gen not in devices:
            topo = topologies.get_topology_desc(
                topology_name=TOPOLOGIES[gen], platform="tpu", chip_config_name="default",
                chips_per_host_bounds=(1, 1, 1), num_slices=1)
            devices[gen] = topo.devices[0]
        return devices[gen]

    out.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        try:
            gen = req["generation"]
            if gen not in TOPOLOGIES:
                raise ValueError(f"no TPU topology for generation {gen!r} "
                                 f"(known: {', '.join(TOPOLOGIES)})")
            dev = device(gen)
            with open(req["module"], "rb") as f:
                exported = jax.export.deserialize(bytearray(f.read()))
            sharding = jax.sharding.SingleDeviceSharding(dev)
            specs = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=sharding)
                     for a in exported.in_avals]
            _clear(dump_dir)
            t0 = time.perf_counter()
            compiled = jax.jit(exported.call).lower(*specs).compile()
            hlo = compiled.as_text()
            reply = {"ok": True, "compile_s": time.perf_counter() - t0,
                     "cycles": _read_cycles(dump_dir), "cost_analysis": _cost_analysis(compiled),
                     "compute_ops": _compute_ops(hlo), "cost_model": _cost_model(hlo),
                     "op_bytes": _op_bytes(hlo),
                     "io_bytes": _io_bytes(exported), "custom_calls": _custom_calls(hlo),
                     "device_kind": dev.device_kind}
        except Exception as e:  # noqa: BLE001 - the compiler's refusal is the answer
            reply = {"ok": False, "error": f"{type(e).__name__}: {e}"[:20000],
                     "error_type": type(e).__name__}
        out.write(json.dumps(reply) + "\n")
    # The end of input: the parent exited or was killed (its close() kills this process first).
    _remove_own_folder()
    return 0


if __name__ == "__main__":
    sys.exit(main())
