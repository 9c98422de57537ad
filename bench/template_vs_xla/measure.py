"""The generator's first kernels against XLA, on the TPU compiler's static cycles (no TPU needed).

For each task of bench/suites/reference: the generator writes the kernel (target v5e, full
sizes), then one child process per program compiles it for a v5e topology with libtpu and sums
the `estimated_cycles` of the per-op static LLO profiles (the dump flag is read once per libtpu
start, hence one process per program). Speedup = XLA cycles / kernel cycles.

Run with a Python that has libtpu (e.g. /work/venv-tpu/bin/python):
    python bench/template_vs_xla/measure.py [--only NAME ...] [--out results.json]
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
SUITE = ROOT / "bench" / "suites" / "reference"
WORKER = ROOT / "tpu" / "worker"
COMPILE_TIMEOUT_S = int(os.environ.get("MK_COMPILE_TIMEOUT_S", "600"))


def task_spec(path: pathlib.Path) -> dict:
    if (path / "baseline.py").exists():
        return {"form": "jaxbench", "baseline": str(path / "baseline.py")}
    return {"form": "maxkernel", "dir": str(path)}


def _setup_worker_path():
    sys.path.insert(0, str(WORKER))


def generate(spec: dict, target: str) -> dict:
    """The first kernel for a task (class, source, notes) or the refusal."""
    _setup_worker_path()
    import jax
    jax.config.update("jax_platforms", "cpu")
    from mkworker.generate import classes as KC
    from mkworker.generate import common as G
    from mkworker.ops import generate as GEN
    from mkworker.tasks import tasks as tasks_tasks
    task = tasks_tasks.resolve(spec, None, None)
    try:
        tgt = GEN._target(target)
        ctx = GEN.build_context(task, task.default_entry, tgt, "tpu")
        try:
            gen, _tried, refusals = KC.run_templates(ctx)
        except Exception as e:  # noqa: BLE001 - a refusal is a result here
            return {"class": None, "error": str(getattr(e, "message", e))[:300]}
        if gen is None:
            why = "; ".join(f"{k}: {e.message}" for k, e in refusals) or "no template"
            return {"class": None, "error": why[:300]}
        return {"class": gen.kernel_class, "source": gen.source, "entry": gen.entry,
                "notes": gen.notes, "target": tgt, "vmem_limit": G.target_vmem_limit(tgt)}
    finally:
        task.close()


def cycles_child(spec: dict, which: str, source_file: str | None, entry: str | None,
                 topology: str) -> dict:
    """In a fresh process (LIBTPU_INIT_ARGS set by the parent): compile one program for the
    topology's device and sum the dumped estimated cycles."""
    _setup_worker_path()
    import jax
    jax.config.update("jax_platforms", "cpu")
    from mkworker.judge import run
    from mkworker.tasks import tasks as tasks_tasks
    from jax.experimental import topologies
    task = tasks_tasks.resolve(spec, None, None)
    topo = topologies.get_topology_desc(topology_name=topology, platform="tpu",
                                        chip_config_name="default",
                                        chips_per_host_bounds=(1, 1, 1), num_slices=1)
    dev = topo.devices[0]
    if which == "xla":
        fn = task.reference_fn
    else:
        ns: dict = {"__name__": "generated_kernel"}
        src = pathlib.Path(source_file).read_text()
        exec(compile(src, source_file, "exec"), ns)  # noqa: S102 - our own generated module
        fn = ns[entry]
    args, kwargs = run.abstract_inputs(task)
    bound, dyn_args, dyn_kwargs, _ = run.bind_static(fn, args, kwargs)
    sh = jax.sharding.SingleDeviceSharding(dev)

    def sds(a):
        return jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=sh) if hasattr(a, "shape") else a

    dyn_args = [sds(a) for a in dyn_args]
    dyn_kwargs = {k: sds(v) for k, v in dyn_kwargs.items()}
    compiled = jax.jit(bound).lower(*dyn_args, **dyn_kwargs).compile()
    mem = compiled.memory_analysis()
    return {"temp_bytes": getattr(mem, "temp_size_in_bytes", None)}


def read_cycles(dump_dir: str) -> int:
    total = 0
    for f in glob.glob(os.path.join(dump_dir, "**", "*static_llo_profile*"), recursive=True):
        for m in re.finditer(r"estimated_cycles:\s*(\d+)", pathlib.Path(f).read_text(errors="replace")):
            total += int(m.group(1))
    return total


def measure_program(spec, which, source_file, entry, topology) -> dict:
    with tempfile.TemporaryDirectory(prefix="mk_cycles_") as d:
        env = dict(os.environ, ALLOW_MULTIPLE_LIBTPU_LOAD="1",
                   LIBTPU_INIT_ARGS=f"--xla_jf_dump_static_llo_profile_to={d}",
                   JAX_PLATFORMS="cpu", TPU_SKIP_MDS_QUERY="1",
                   # libtpu's log files with the dump, fatal only (it can log GiBs: see
                   # tpu_compiler/compiler.py's log_bytes)
                   TPU_LOG_DIR=d, TPU_MIN_LOG_LEVEL=os.environ.get("TPU_MIN_LOG_LEVEL", "3"))
        cmd = [sys.executable, __file__, "--child", json.dumps(
            {"spec": spec, "which": which, "source": source_file, "entry": entry,
             "topology": topology})]
        try:
            p = subprocess.run(cmd, check=False, env=env, capture_output=True, text=True,
                               timeout=COMPILE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return {"error": f"compile exceeded {COMPILE_TIMEOUT_S} s"}
        if p.returncode != 0:
            tail = [ln for ln in p.stderr.splitlines() if ln.strip()][-3:]
            return {"error": " | ".join(tail)[:400]}
        out = json.loads(p.stdout.strip().splitlines()[-1])
        out["cycles"] = read_cycles(d)
        return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--child")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--target", default="v5e")
    ap.add_argument("--topology", default="v5e:1x1")
    ap.add_argument("--out", default=None)
    ap.add_argument("--keep", default=None, help="folder to keep the generated kernels in")
    ap.add_argument("--xla-cache", default=str(pathlib.Path(__file__).with_name("xla_cycles.json")),
                    help="XLA cycles per task, measured once")
    a = ap.parse_args()
    if a.child:
        c = json.loads(a.child)
        r = cycles_child(c["spec"], c["which"], c["source"], c["entry"], c["topology"])
        print(json.dumps(r))
        return
    tasks = sorted(p for p in SUITE.glob("*/*") if p.is_dir())
    if a.only:
        tasks = [p for p in tasks if p.name in a.only]
    keep = pathlib.Path(a.keep or tempfile.mkdtemp(prefix="mk_kernels_"))
    keep.mkdir(parents=True, exist_ok=True)
    xla_cache = pathlib.Path(a.xla_cache)
    results = []
    for path in tasks:
        spec = task_spec(path)
        g = generate(spec, a.target)
        row = {"task": path.name, "class": g.get("class")}
        if g.get("class") is None:
            row["refused"] = g["error"]
            results.append(row)
            print(json.dumps(row), flush=True)
            continue
        src = keep / f"{path.name}.py"
        src.write_text(g["source"])
        # XLA's program does not change with the generator: its cycles are kept per topology.
        cache = json.loads(xla_cache.read_text()) if xla_cache.exists() else {}
        key = f"{a.topology}/{path.parent.name}/{path.name}"
        x = cache.get(key)
        if x is None or x.get("error"):
            x = measure_program(spec, "xla", None, None, a.topology)
            cache[key] = x
            xla_cache.write_text(json.dumps(cache, indent=1, sort_keys=True) + "\n")
        k = measure_program(spec, "kernel", str(src), g["entry"], a.topology)
        row.update(xla_cycles=x.get("cycles"), kernel_cycles=k.get("cycles"),
                   kernel_error=k.get("error"), xla_error=x.get("error"))
        if x.get("cycles") and k.get("cycles"):
            row["speedup"] = round(x["cycles"] / k["cycles"], 3)
        results.append(row)
        print(json.dumps(row), flush=True)
    by_class: dict = {}
    for r in results:
        if r.get("speedup"):
            by_class.setdefault(r["class"], []).append(r["speedup"])
    summary = {c: round(math.exp(sum(map(math.log, v)) / len(v)), 3) for c, v in by_class.items()}
    allv = [r["speedup"] for r in results if r.get("speedup")]
    if allv:
        summary["geomean"] = round(math.exp(sum(map(math.log, allv)) / len(allv)), 3)
    print(json.dumps({"summary": summary}), flush=True)
    if a.out:
        pathlib.Path(a.out).write_text(json.dumps({"results": results, "summary": summary}, indent=1))


if __name__ == "__main__":
    main()
