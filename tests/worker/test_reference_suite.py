"""bench/suites/reference: every task loads, its reference traces at the full (production)
shapes without data, and runs at the suite's shrunk instance through a real worker."""

import math
import os
import sys
import types

import jax
import pytest
from worker_harness import ROOT

sys.path.insert(0, os.path.join(ROOT, "tpu", "worker"))

from mkworker.judge import run
from mkworker.tasks import tasks
from mkworker.tasks import yaml

SUITE = os.path.join(ROOT, "bench", "suites", "reference")
# The shrink factor each suite is checked at on a CPU host (README.md).
SHRINK = {"jaxbench": 8, "maxkernel": 8}
SOURCE_FILE = {"jaxbench": "baseline.py", "maxkernel": "reference.py"}


def _tasks():
    out = []
    for fmt in ("jaxbench", "maxkernel"):
        folder = os.path.join(SUITE, fmt)
        out += [(fmt, name) for name in sorted(os.listdir(folder))
                if os.path.isdir(os.path.join(folder, name)) and not name.startswith((".", "_"))]
    return out


TASKS = _tasks()


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def _describe(value):
    """Shapes and dtypes of the arrays, values of the statics, and the structure."""
    leaves, tree = jax.tree_util.tree_flatten(value)
    return str(tree), [(tuple(x.shape), str(x.dtype)) if run.is_data(x) else x for x in leaves]


def _task_obj(fmt, name):
    return {"form": fmt, "dir": os.path.join(SUITE, fmt, name)}


def test_suite_size_and_layout():
    assert len(TASKS) >= 24
    for fmt, name in TASKS:
        files = sorted(f for f in os.listdir(os.path.join(SUITE, fmt, name)) if not f.startswith(("_", ".")))
        # Reference-only, in the published layouts.
        assert files == (["baseline.py"] if fmt == "jaxbench" else ["kernel_task.yaml", "reference.py"]), \
            (fmt, name, files)
    readme = _read(os.path.join(SUITE, "README.md"))
    for _, name in TASKS:
        assert f"`{name}`" in readme, f"{name} is missing from README.md"


@pytest.mark.parametrize("fmt, name", TASKS)
def test_reference_traces_at_full_shapes(fmt, name):
    task = tasks.resolve(_task_obj(fmt, name), None, None)
    try:
        args, kwargs = run.abstract_inputs(task)
        ref, dyn, dkw, _ = run.bind_static(task.reference_fn, args, kwargs)
        outs = jax.tree_util.tree_leaves(jax.eval_shape(ref, *dyn, **dkw))
        assert outs and all(o.ndim >= 1 for o in outs)
        # Production sizes: some input has 8M elements or more.
        assert max(math.prod(a.shape) for a in dyn) >= 1 << 23, [a.shape for a in dyn]
        if fmt == "maxkernel":
            # The YAML repeats get_inputs in input_gen_code: both must describe the same inputs.
            ypath = os.path.join(SUITE, fmt, name, "kernel_task.yaml")
            cfg = yaml.loads(_read(ypath))
            assert set(cfg) == {"task_id", "description", "input_gen_code", "rtol", "atol"}
            assert cfg["task_id"] == name
            gen = tasks._input_gen_module(cfg["input_gen_code"], ypath, os.path.dirname(ypath))
            try:
                from_yaml = types.SimpleNamespace(inputs_fn=gen.get("get_inputs"), inputs_takes_key=False,
                                                  inputs_name="get_inputs", inputs_module=gen)
                assert _describe(run.abstract_value(from_yaml)) == _describe(run.abstract_value(task))
            finally:
                gen.close()
    finally:
        task.close()


@pytest.mark.parametrize("fmt, name", TASKS)
def test_reference_runs_at_the_shrunk_instance(worker, fmt, name):
    # The reference itself as the candidate: the frozen reference is computed at the shrunk
    # instance first (a failure there is a `task` error), then the pallas_call gate refuses the
    # plain-JAX candidate, so no kernel is compiled.
    ref_file = os.path.join(SUITE, fmt, name, SOURCE_FILE[fmt])
    source = _read(ref_file)
    r = worker.request("evaluate", task=_task_obj(fmt, name), source=source, filename=ref_file,
                       shrink=SHRINK[fmt], num_seeds=1, timing=False, timeout=300)
    assert r["ok"], r.get("error")
    assert r["failure"]["kind"] == "no_pallas_call", r["failure"]
    inst = r["instance"]
    assert inst["kind"] == "shrunk" and inst["factor"] == SHRINK[fmt]
    assert inst["data"] == "the task's inputs function at the shrunk sizes", inst
    assert inst["input_shapes"] != inst["full_input_shapes"]
    assert not [w for w in r["warnings"] if "constant" in w or "zeros" in w], r["warnings"]
