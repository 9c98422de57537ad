"""generate: the fused multi-kernel classes (gated_mlp, ...).

Per class: at FULL size the generated module lowers for TPU (the op lowers it before it answers;
the test lowers the returned text again through the lower op and reads its facts); at a small
RAGGED size (no tile divides a dim) with small block constants, so every grid axis has an edge
block, the module passes evaluate in interpret mode.
"""

import ast

import pytest
from worker_harness import read_task, task_path

DIR = "generate_fused"
SEED = [5]


def _task(name, replace=None):
    path = task_path(DIR, name)
    if replace is None:
        return {"form": "infile", "path": path}
    text = read_task(DIR, name)
    assert replace[0] in text, replace[0]
    return {"form": "infile", "source": text.replace(*replace), "filename": path}


def _generate(worker, task):
    r = worker.request("generate", task=task, timeout=300)
    assert r["ok"] is True, r.get("error", r)
    assert r["lowering"]["ok"] is True
    return r


def _readable(r, constants):
    tree = ast.parse(r["source"])
    assigned = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets}
    for c in constants:
        assert c in assigned and r["tunables"][c], c
    assert "VMEM_LIMIT_BYTES" in assigned and "vmem_limit_bytes=VMEM_LIMIT_BYTES" in r["source"]
    assert "interpret=" not in r["source"] and "dimension_semantics=" in r["source"]


def _lower_again(worker, task, r, tmp_path, calls):
    f = tmp_path / "generated_kernel.py"
    f.write_text(r["source"], encoding="utf-8")
    lo = worker.request("lower", task=task, source=r["source"], filename=str(f), kernel=r["entry"],
                        target="tpu", timeout=300)
    assert lo["ok"] is True, lo.get("error")
    assert lo["lowered"] is True and lo["num_pallas_calls"] == calls
    return lo["pallas_calls"]


def _set(source, **consts):
    lines = source.splitlines()
    for name, value in consts.items():
        hits = [i for i, line in enumerate(lines) if line.startswith(f"{name} = ")]
        assert len(hits) == 1, name
        lines[hits[0]] = f"{name} = {value!r}"
    return "\n".join(lines) + "\n"


def _evaluate(worker, task, r, tmp_path, source):
    f = tmp_path / "generated_kernel.py"
    f.write_text(source, encoding="utf-8")
    ev = worker.request("evaluate", task=task, source=source, filename=str(f), kernel=r["entry"],
                        seeds=SEED, timing=False, timeout=300)
    assert ev["ok"] is True, ev.get("error")
    assert ev["correct"] is True, ev["failure"]
    assert ev["run_mode"]["mode"] == "interpret", ev["run_mode"]
    return ev


# ---------------------------------------------------------------------------
# gated_mlp

MLP_SIZE = "T, D, F = 64, 256, 384"
MLP_FULL = (MLP_SIZE, "T, D, F = 4096, 4096, 14336")
MLP_RAGGED = (MLP_SIZE, "T, D, F = 50, 200, 300")
MLP_SMALL_TILES = dict(BLOCK_M=16, BLOCK_F=128, BLOCK_K=128, BLOCK_M_DOWN=16, BLOCK_D=128,
                       BLOCK_FK=128)


def test_gated_mlp_full_size_lowers(worker, tmp_path):
    task = _task("swiglu_mlp.py", MLP_FULL)
    r = _generate(worker, task)
    assert r["class"] == "gated_mlp"
    assert r["description"].startswith("gated MLP (three projections): sigmoid gate")
    assert any(n.startswith("chosen: two projections read the same input") for n in r["notes"])
    _readable(r, list(MLP_SMALL_TILES))
    gate_up, down = _lower_again(worker, task, r, tmp_path, calls=2)
    # gate+up: x, w_gate, w_up in; two f32 accumulators; K last and "arbitrary".
    assert gate_up["dimension_semantics"] == ["parallel", "parallel", "arbitrary"]
    bm, bk = gate_up["operands"][0]["block_shape"]
    bf = gate_up["operands"][1]["block_shape"][1]
    assert gate_up["grid"] == [8192 // bm, 14336 // bf, 4096 // bk]
    assert min(bm, bf) >= 256 and gate_up["vmem_bytes_per_step"] <= 16 * 1024 * 1024
    assert down["grid"][2] == -(-14336 // down["operands"][0]["block_shape"][1])


def test_gated_mlp_ragged_small_instance_is_correct(worker, tmp_path):
    task = _task("swiglu_mlp.py", MLP_RAGGED)
    r = _generate(worker, task)
    assert r["class"] == "gated_mlp"
    # 100 rows, 200 deep, 300 hidden: every axis of both grids ends in a ragged block.
    _evaluate(worker, task, r, tmp_path, _set(r["source"], **MLP_SMALL_TILES))
