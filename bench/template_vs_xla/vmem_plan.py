"""The generator's VMEM plan against what the TPU compiler allocates (no TPU needed).

For each task: the generator writes the kernel (v5e, full sizes) and states its per-step VMEM
plan in a note; the kernel is compiled for a v5e topology with its vmem_limit_bytes lowered to
1 MiB, and Mosaic's refusal ("Scoped allocation with size X and limit 1.00M") names what the
kernel really allocates per step. Run with a Python that has libtpu:
    python bench/template_vs_xla/vmem_plan.py [TASK ...]
"""

from __future__ import annotations

import json
import pathlib
import re
import sys

import measure

UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def plan_bytes(notes) -> int | None:
    for n in notes:
        m = re.search(r"([0-9.]+) MiB (?:of )?VMEM per step", n)
        if m:
            return int(float(m.group(1)) * (1 << 20))
    return None


def compiler_bytes(source: str, entry: str, spec: dict) -> tuple[int | None, str]:
    import jax
    from mkworker.judge import run
    from mkworker.tasks import tasks
    from jax.experimental import topologies
    low = re.sub(r"vmem_limit_bytes=\d+ \* 1024 \* 1024", "vmem_limit_bytes=1024 * 1024", source)
    ns: dict = {"__name__": "generated_kernel"}
    exec(compile(low, "<generated>", "exec"), ns)  # noqa: S102 - our own generated module
    task = tasks.resolve(spec, None, None)
    try:
        topo = topologies.get_topology_desc(topology_name="v5e:1x1", platform="tpu",
                                            chip_config_name="default",
                                            chips_per_host_bounds=(1, 1, 1), num_slices=1)
        sh = jax.sharding.SingleDeviceSharding(topo.devices[0])
        args, kwargs = run.abstract_inputs(task)
        bound, dyn, dkw, _ = run.bind_static(ns[entry], args, kwargs)
        dyn = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=sh) for a in dyn]
        try:
            jax.jit(bound).lower(*dyn, **dkw).compile()
            return None, "compiled under 1 MiB"
        except Exception as e:  # noqa: BLE001 - the refusal is the measurement
            m = re.search(r"Scoped allocation with size ([0-9.]+)([KMG])", str(e))
            if not m:
                return None, str(e)[:300]
            return int(float(m.group(1)) * UNITS[m.group(2)]), ""
    finally:
        task.close()


def main():
    import jax
    jax.config.update("jax_platforms", "cpu")
    names = sys.argv[1:] or ["rmsnorm", "softmax_rows", "gated_tanh_chain", "linear_softmax",
                             "linear_bias_gelu", "attention_noncausal"]
    for path in sorted(p for p in measure.SUITE.glob("*/*") if p.name in names):
        spec = measure.task_spec(path)
        g = measure.generate(spec, "v5e")
        if not g.get("class"):
            print(json.dumps({"task": path.name, "refused": g.get("error")}), flush=True)
            continue
        plan = plan_bytes(g["notes"])
        got, err = compiler_bytes(g["source"], g["entry"], spec)
        row = {"task": path.name, "class": g["class"], "plan_mib": plan and round(plan / 2**20, 2),
               "compiler_mib": got and round(got / 2**20, 2), "error": err or None}
        if plan and got:
            row["compiler_over_plan"] = round(got / plan, 3)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    measure._setup_worker_path()
    main()
