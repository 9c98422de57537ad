"""Helpers for the generate tests of the rowwise and attention templates: tasks at another size
(a line of the task text replaced), the generate / lower / evaluate round trips."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest
from worker_harness import WorkerProcess, read_task, task_path

# Compile tests need libtpu; a run without it skips them and says why.
needs_libtpu = pytest.mark.skipif(
    importlib.util.find_spec("libtpu") is None,
    reason="declared: libtpu is not installed (pip install -r scripts/requirements.txt)")

SEEDS = [3, 4]
DIR = "generate_rows"


def infile(name, replace=None):
    """An in-file task; `replace` = (old line, new line) makes another size of it."""
    path = task_path(DIR, name)
    if replace is None:
        return {"form": "infile", "path": path}
    text = read_task(DIR, name)
    assert replace[0] in text, replace[0]
    return {"form": "infile", "source": text.replace(*replace), "filename": path}


def infile_lines(folder, name, **lines):
    """An in-file task of tasks/`folder` with some of its top lines replaced: NAME=value (the
    value as written; `A__B` stands for the line `A, B = ...`)."""
    text = read_task(folder, name)
    for start, new in lines.items():
        start = start.replace("__", ", ")
        hits = [ln for ln in text.splitlines() if ln.startswith(start + " = ")]
        assert len(hits) == 1, start
        text = text.replace(hits[0], f"{start} = {new}")
    return {"form": "infile", "source": text, "filename": task_path(folder, name)}


def maxkernel(tmp_path, name, replace=None):
    """A copy of a MaxKernel folder, the line replaced in the reference and the YAML alike."""
    src = pathlib.Path(task_path(DIR, name))
    dst = tmp_path / name
    dst.mkdir()
    for f in sorted(p.name for p in src.iterdir()):
        text = (src / f).read_text(encoding="utf-8")
        if replace is not None:
            assert replace[0] in text, f
            text = text.replace(*replace)
        (dst / f).write_text(text, encoding="utf-8")
    return {"form": "maxkernel", "dir": str(dst)}


def jaxbench(name, replace=None):
    path = task_path(DIR, name, "baseline.py")
    if replace is None:
        return {"form": "jaxbench", "baseline": path}
    text = read_task(DIR, name, "baseline.py")
    assert replace[0] in text, replace[0]
    return {"form": "jaxbench", "baseline_source": text.replace(*replace), "baseline_filename": path}


def generate(worker, task, **kw):
    r = worker.request("generate", task=task, timeout=300, **kw)
    assert r["ok"] is True, r.get("error", r)
    assert r["lowering"]["ok"] is True
    return r


def refusal(worker, task) -> dict:
    r = worker.request("generate", task=task, timeout=300)
    assert r["ok"] is False, r.get("class")
    assert r["error"]["kind"] == "no_template", r["error"]
    return r["error"]


def lower_again(worker, task, r, tmp_path, source=None) -> dict:
    """The returned text, as a candidate, lowers for TPU through the lower op: its facts."""
    source = source or r["source"]
    f = tmp_path / "generated_kernel.py"
    f.write_text(source, encoding="utf-8")
    lo = worker.request("lower", task=task, source=source, filename=str(f), kernel=r["entry"],
                        target="tpu", timeout=300)
    assert lo["ok"] is True, lo.get("error")
    assert lo["lowered"] is True and lo["num_pallas_calls"] == 1
    return lo["pallas_calls"][0]


def evaluate(worker, task, r, tmp_path, source=None, seeds=None, **kw) -> dict:
    """evaluate in interpret mode must find the module correct (each seed runs twice: candidate
    first and reference first)."""
    source = source or r["source"]
    f = tmp_path / "generated_kernel.py"
    f.write_text(source, encoding="utf-8")
    ev = worker.request("evaluate", task=task, source=source, filename=str(f), kernel=r["entry"],
                        seeds=seeds or SEEDS, timing=False, timeout=300, **kw)
    assert ev["ok"] is True, ev.get("error")
    assert ev["correct"] is True, ev["failure"]
    assert ev["run_mode"]["mode"] == "interpret", ev["run_mode"]
    return ev


def set_constant(source: str, name: str, value) -> str:
    """The module with a block constant changed, as the autotuner would."""
    lines = source.splitlines()
    hits = [i for i, line in enumerate(lines) if line.startswith(f"{name} = ")]
    assert len(hits) == 1, name
    lines[hits[0]] = f"{name} = {value!r}"
    return "\n".join(lines) + "\n"


def compile_for_tpu(worker, task, r, tmp_path, generation="v5e", time_s=600) -> dict:
    """The generated module lowered and compiled for `generation` by the TPU compiler (libtpu, no
    TPU; the worker needs MAXKERNEL_TPU_COMPILE=1): the candidate's compile record."""
    f = tmp_path / "generated_kernel.py"
    f.write_text(r["source"], encoding="utf-8")
    lo = worker.request("lower", task=task, source=r["source"], filename=str(f), kernel=r["entry"],
                        target="tpu", generation=generation, compile_reference=False,
                        compile_limits={"time_s": time_s}, timeout=time_s + 300)
    assert lo["ok"] is True, lo.get("error")
    assert lo["compiled_by"] == "tpu_compiler", lo
    return lo["tpu_compile"]["candidate"]


def assert_compiles_with_cycles(worker, task, r, tmp_path, generation="v5e") -> dict:
    cand = compile_for_tpu(worker, task, r, tmp_path, generation)
    assert cand["status"] == "compiled", cand
    assert (cand.get("cycles") or 0) > 0, cand
    return cand


def generate_and_compile(task, tmp_path, edit=None, words=None) -> tuple[dict, dict]:
    """The task's module from a worker with the TPU compiler on (its description holding `words`,
    its source passed through `edit`), compiled for v5e with cycles: (generate reply, the
    candidate's compile record)."""
    w = WorkerProcess(extra_env={"MAXKERNEL_TPU_COMPILE": "1"})
    try:
        r = generate(w, task)
        assert words is None or words in r["description"], r["description"]
        if edit is not None:
            r = dict(r, source=edit(r["source"]))
        return r, assert_compiles_with_cycles(w, task, r, tmp_path)
    finally:
        w.close()
