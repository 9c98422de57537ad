"""generate: the fused multi-kernel classes (gated_mlp, ...).

Per class: at FULL size the generated module lowers for TPU (the op lowers it before it answers;
the test lowers the returned text again through the lower op and reads its facts); at a small
RAGGED size (no tile divides a dim) with small block constants, so every grid axis has an edge
block, the module passes evaluate in interpret mode.
"""

import ast
import importlib.util
import re

import generate_rows_helpers as H
import pytest
from worker_harness import WorkerProcess, read_task, task_path

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


def _vmem_limit(r) -> int:
    """The VMEM_LIMIT_BYTES the generated module sets (its scoped VMEM on the target)."""
    for n in ast.parse(r["source"]).body:
        if isinstance(n, ast.Assign) and any(getattr(t, "id", None) == "VMEM_LIMIT_BYTES" for t in n.targets):
            return int(eval(compile(ast.Expression(n.value), "<limit>", "eval"), {"__builtins__": {}}))
    raise AssertionError("no VMEM_LIMIT_BYTES")


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
MLP_SMALL_TILES = {"BLOCK_M": 16, "BLOCK_F": 128, "BLOCK_K": 128, "BLOCK_M_DOWN": 16, "BLOCK_D": 128,
                       "BLOCK_FK": 128}


def test_gated_mlp_full_size_lowers(worker, tmp_path):
    task = _task("swiglu_mlp.py", MLP_FULL)
    r = _generate(worker, task)
    assert r["class"] == "gated_mlp"
    assert r["description"].startswith("gated MLP (three projections): sigmoid gate")
    assert r["why"].startswith("gated_mlp: two projections read the same input")
    assert r["warnings"] == []
    _readable(r, list(MLP_SMALL_TILES))
    gate_up, down = _lower_again(worker, task, r, tmp_path, calls=2)
    # gate+up: x, w_gate, w_up in; two f32 accumulators; K last and "arbitrary".
    assert gate_up["dimension_semantics"] == ["parallel", "parallel", "arbitrary"]
    bm, bk = gate_up["operands"][0]["block_shape"]
    bf = gate_up["operands"][1]["block_shape"][1]
    assert gate_up["grid"] == [-(-8192 // bm), -(-14336 // bf), -(-4096 // bk)]
    assert min(bm, bf) >= 256 and gate_up["vmem_bytes_per_step"] <= _vmem_limit(r)
    assert down["grid"][2] == -(-14336 // down["operands"][0]["block_shape"][1])
    # The whole model dim (4096) in one gate+up step: the f32 partial products of the two
    # projections never go through the accumulators (split in two, the kernel read 2.5 % slower
    # than in one on v5e's compiler). The 14336-deep down projection stays split (past
    # fused.WHOLE_K_MAX Mosaic's unrolled body takes the compiler 15.8 GB).
    assert gate_up["grid"][2] == 1 and bk == 4096, gate_up["grid"]
    assert down["grid"][2] > 1


def test_gated_mlp_ragged_small_instance_is_correct(worker, tmp_path):
    task = _task("swiglu_mlp.py", MLP_RAGGED)
    r = _generate(worker, task)
    assert r["class"] == "gated_mlp"
    # 100 rows, 200 deep, 300 hidden: every axis of both grids ends in a ragged block.
    _evaluate(worker, task, r, tmp_path, _set(r["source"], **MLP_SMALL_TILES))


def _bf16_mlp(size):
    task = _task("swiglu_mlp.py", (MLP_SIZE, size))
    text = task["source"].replace("jnp.float32", "jnp.bfloat16")
    task["source"] = text.replace('{"rtol": 1e-4, "atol": 1e-4}', '{"rtol": 2e-2, "atol": 2e-2}')
    return task


def test_a_bf16_gated_mlp_with_ragged_depth_is_correct(worker, tmp_path):
    # Every depth step of both projections zeroes what lies past its end; 16-bit tiles are
    # masked in f32 (the compile test below says why).
    task = _bf16_mlp("T, D, F = 50, 200, 300")
    r = _generate(worker, task)
    assert "tile.astype(jnp.float32)" in r["source"]
    _evaluate(worker, task, r, tmp_path, _set(r["source"], **MLP_SMALL_TILES))


@H.needs_libtpu
def test_a_bf16_gated_mlp_with_ragged_depth_compiles_with_cycles(tmp_path):
    # 1408 hidden columns in 1024-deep down-projection steps: the last step is ragged. Masked in
    # bf16, libtpu's static profile aborted ("Expected vector-bf16packed, got vector-int16" on
    # the MXU operand), and llama_mlp_bf16 (11008 hidden) had no cycles.
    _, cand = H.generate_and_compile(_bf16_mlp("T, D, F = 256, 512, 1408"), tmp_path,
                                     edit=lambda src: _set(src, BLOCK_FK=1024))
    assert "profile_crash" not in cand, cand["profile_crash"][:500]


# ---------------------------------------------------------------------------
# matmul_group_norm

GN_SIZE = "M, K, C, GROUPS = 64, 256, 512, 8"
GN_FULL = (GN_SIZE, "M, K, C, GROUPS = 8192, 4096, 8192, 32")
# 10 groups of 64 channels with 4 groups a tile: the last column tile holds 2 groups and
# garbage; 200 deep with 128-deep steps; 20 rows with 16-row tiles.
GN_RAGGED = (GN_SIZE, "M, K, C, GROUPS = 20, 200, 640, 10")
# 10 groups of 128 channels (summed on lanes): the last column tile holds 2 groups and garbage.
GN_RAGGED_LANES = (GN_SIZE, "M, K, C, GROUPS = 20, 200, 1280, 10")
# 10 groups of 96 channels (they straddle 128-lane columns: one indicator over the whole tile).
GN_RAGGED_WIDE = (GN_SIZE, "M, K, C, GROUPS = 20, 200, 960, 10")


def test_group_norm_full_size_lowers(worker, tmp_path):
    task = _task("linear_group_norm.py", GN_FULL)
    r = _generate(worker, task)
    assert r["class"] == "matmul_group_norm"
    assert "GroupNorm over 32 groups of 256 channels" in r["description"]
    _readable(r, ["BLOCK_M", "GROUPS_PER_TILE", "BLOCK_K"])
    src = r["source"]
    assert "eps=eps" in src and "v2 = _group_sum(" in src  # the static eps reaches the kernel
    assert src.count("= _group_sum(") == 2  # jnp.var's recomputed mean is summed once
    (call,) = _lower_again(worker, task, r, tmp_path, calls=1)
    assert call["dimension_semantics"] == ["parallel", "parallel", "arbitrary"]
    bm, bk = call["operands"][0]["block_shape"]
    bc = call["operands"][1]["block_shape"][1]
    assert bc % 256 == 0 and bc % 128 == 0  # whole groups, lane-aligned
    assert call["grid"] == [-(-8192 // bm), -(-8192 // bc), -(-4096 // bk)]  # a ragged channel tile is masked
    # Groups of 256 channels are summed on their own lanes: the indicator input is a
    # placeholder block and no indicator product runs (three MXU passes of (bm, bc) x (bc, bc)).
    assert call["operands"][2]["block_shape"] == [16, 128]
    assert call["vmem_bytes_per_step"] <= _vmem_limit(r) <= 48 << 20


@pytest.mark.parametrize("size", [GN_RAGGED, GN_RAGGED_LANES, GN_RAGGED_WIDE],
                         ids=["indicator-per-128-lanes", "lanes", "indicator-per-tile"])
def test_group_norm_ragged_small_instance_is_correct(worker, tmp_path, size):
    task = _task("linear_group_norm.py", size)
    r = _generate(worker, task)
    assert r["class"] == "matmul_group_norm"
    _evaluate(worker, task, r, tmp_path,
              _set(r["source"], BLOCK_M=16, GROUPS_PER_TILE=4, BLOCK_K=128))


# ---------------------------------------------------------------------------
# matmul_batch_norm

BN_SIZE = "M, K, C = 64, 256, 256"
BN_FULL = (BN_SIZE, "M, K, C = 4096, 8192, 8192")
# 44 rows in 16-row tiles (the statistics must skip the last tile's 4 garbage rows), 200 deep,
# 300 channels in 128-wide tiles.
BN_RAGGED = (BN_SIZE, "M, K, C = 44, 200, 300")


def test_batch_norm_full_size_lowers(worker, tmp_path):
    task = _task("linear_batch_norm.py", BN_FULL)
    r = _generate(worker, task)
    assert r["class"] == "matmul_batch_norm"
    assert "batch statistics over all 4096 rows" in r["description"]
    _readable(r, ["BLOCK_M", "BLOCK_C", "BLOCK_K", "NORM_BLOCK_M", "NORM_BLOCK_C"])
    src = r["source"]
    # The centred sum of squares comes from the column sums; eps and the row count are
    # the module's own (a shrunk instance has fewer rows).
    assert "- 2.0 * " in src and "+ eps" in src and "float(m)" in src and "4096" not in \
        src.split("def candidate")[1]
    stats_call, norm_call = _lower_again(worker, task, r, tmp_path, calls=2)
    # The leading axis is the instance (one for BatchNorm: statistics over every row).
    assert stats_call["dimension_semantics"] == ["parallel", "parallel", "parallel", "arbitrary"]
    assert norm_call["dimension_semantics"] == ["parallel", "parallel", "parallel"]
    assert stats_call["grid"][0] == 1
    bm, _bk = stats_call["operands"][0]["block_shape"][-2:]
    assert bm >= 256 and stats_call["vmem_bytes_per_step"] <= _vmem_limit(r)


def test_batch_norm_ragged_small_instance_is_correct(worker, tmp_path):
    task = _task("linear_batch_norm.py", BN_RAGGED)
    r = _generate(worker, task)
    assert r["class"] == "matmul_batch_norm"
    _evaluate(worker, task, r, tmp_path,
              _set(r["source"], BLOCK_M=16, BLOCK_C=128, BLOCK_K=128, NORM_BLOCK_M=16,
                   NORM_BLOCK_C=128))


# matmul_batch_norm with statistics per instance (InstanceNorm): x (B, L, K) with statistics
# over L, or x (B, H, W, K) over (H, W). Ragged: 37 (or 5 x 9 = 45) rows per instance in
# 16-row tiles, so every instance's last row tile has rows the statistics must skip.
IN_SIZE = "B, L, K, C = 4, 64, 256, 256"
IN_CASES = [
    ("B, L, K, C = 3, 37, 200, 300", "None", "float32", "axes (1,) (37 rows) for each of 3"),
    ("B, L, K, C = 2, 0, 200, 300", "(5, 9)", "bfloat16", "axes (1, 2) (45 rows) for each of 2"),
]


def _instance_task(size, spatial, dtype):
    text = read_task(DIR, "linear_instance_norm.py").replace(IN_SIZE, size)
    text = text.replace("SPATIAL = None", f"SPATIAL = {spatial}")
    text = text.replace("DTYPE = jnp.float32", f"DTYPE = jnp.{dtype}")
    if dtype == "bfloat16":
        text = text.replace('"rtol": 1e-4, "atol": 1e-4', '"rtol": 2e-2, "atol": 2e-2')
    return {"form": "infile", "source": text, "filename": task_path(DIR, "linear_instance_norm.py")}


@pytest.mark.parametrize("size, spatial, dtype, words", IN_CASES, ids=["sequence", "spatial-bf16"])
def test_instance_norm_ragged_small_instance_is_correct(worker, tmp_path, size, spatial, dtype,
                                                        words):
    task = _instance_task(size, spatial, dtype)
    r = _generate(worker, task)
    assert r["class"] == "matmul_batch_norm" and words in r["description"], r["description"]
    _evaluate(worker, task, r, tmp_path,
              _set(r["source"], BLOCK_M=16, BLOCK_C=128, BLOCK_K=128, NORM_BLOCK_M=16,
                   NORM_BLOCK_C=128))


def test_instance_norm_kernel_reads_its_instance_count_from_the_input(worker, tmp_path):
    # Generated for 4 instances, checked at a shrunk instance where the batch (a count axis)
    # is 2: the kernel must take the instance count from x's shape, not the task's.
    task = _instance_task(IN_SIZE, "None", "float32")
    r = _generate(worker, task)
    src = _set(r["source"], BLOCK_M=16, BLOCK_C=128, BLOCK_K=128, NORM_BLOCK_M=16, NORM_BLOCK_C=128)
    f = tmp_path / "generated_kernel.py"
    f.write_text(src, encoding="utf-8")
    ev = worker.request("evaluate", task=task, source=src, filename=str(f), kernel=r["entry"], seeds=SEED,
                        timing=False, timeout=300, shrink={"factor": 2, "min_dim": 512})
    assert ev["ok"] is True, ev.get("error")
    assert ev["instance"]["input_shapes"][0] == [2, 64, 256], ev["instance"]
    assert ev["correct"] is True, ev["failure"]


def test_statistics_over_the_channels_and_rows_of_an_instance_are_refused(worker):
    """Statistics over (L, C) per instance (a LayerNorm over the whole instance) sum across
    channel tiles: refused with the reduction named, not written wrong."""
    text = read_task(DIR, "linear_instance_norm.py").replace(
        "axes = tuple(range(1, y.ndim - 1))", "axes = tuple(range(1, y.ndim))")
    r = worker.request("generate", task={"form": "infile", "source": text,
                                         "filename": task_path(DIR, "linear_instance_norm.py")},
                       timeout=300)
    assert r["ok"] is False and r["error"]["kind"] == "no_template", r.get("class")
    assert "reduce_sum" in r["error"]["message"], r["error"]["message"]


@pytest.mark.skipif(importlib.util.find_spec("libtpu") is None,
                    reason="declared: libtpu is not installed (pip install -r scripts/requirements.txt)")
def test_instance_norm_full_size_kernel_compiles_for_tpu(tmp_path):
    task = _instance_task("B, L, K, C = 16, 1024, 2048, 2048", "None", "float32")
    w = WorkerProcess(extra_env={"MAXKERNEL_TPU_COMPILE": "1"})
    try:
        r = _generate(w, task)
        assert "for each of 16 instances" in r["description"], r["description"]
        H.assert_compiles_with_cycles(w, task, r, tmp_path)
    finally:
        w.close()


@pytest.mark.skipif(importlib.util.find_spec("libtpu") is None,
                    reason="declared: libtpu is not installed (pip install -r scripts/requirements.txt)")
def test_batch_norm_full_size_program_fits_v5e_vmem(tmp_path):
    """The suite's linear_batchnorm_sigmoid at full size, planned against v5e's whole VMEM (what
    the product sends): the compiler holds both calls' scoped limits beside one call's windows,
    so a plan at half the VMEM per pass was refused ("Used 135-156M of 128.00M vmem")."""
    task = _task("linear_batch_norm_sigmoid.py", (BN_SIZE, "M, K, C = 4096, 4096, 4096"))
    w = WorkerProcess(extra_env={"MAXKERNEL_TPU_COMPILE": "1"})
    try:
        r = _generate(w, task)
        assert r["class"] == "matmul_batch_norm"
        H.assert_compiles_with_cycles(w, task, r, tmp_path)
        assert 3 * _vmem_limit(r) <= 128 * 1024 * 1024
    finally:
        w.close()


# ---------------------------------------------------------------------------
# conv2d

CONV_SIZE = "N, CIN, H, W, COUT = 2, 8, 16, 16, 16"
CONV_FULL = (CONV_SIZE, "N, CIN, H, W, COUT = 8, 32, 512, 512, 64")
# 11 output rows in 4-row tiles: the last tile's window reaches past the image (padded) and
# its store is clipped.
CONV_RAGGED = (CONV_SIZE, "N, CIN, H, W, COUT = 1, 4, 11, 8, 8")


def test_conv2d_nchw_full_size_lowers(worker, tmp_path):
    task = _task("conv2d_bias_silu.py", CONV_FULL)
    r = _generate(worker, task)
    assert r["class"] == "conv2d"
    assert r["description"].startswith("2-D convolution (8x32x512x512 * 3x3 window, 32->64")
    # 32 channels: XLA keeps W in the lanes, so the lanes form (templates/conv_lanes.py), with
    # the image transposed into (N, H, C, W) and the output back (XLA's copies, said so)
    assert "W in the lanes" in r["description"], r["description"]
    assert r["tunables"]["BLOCK_ROWS"] and "\nBLOCK_ROWS = " in r["source"]
    src = r["source"]
    (limit,) = re.findall(r"vmem_limit_bytes=(\d+) \* 1024 \* 1024", src)
    assert "x.transpose(0, 2, 1, 3)  # (N, H, C, W): XLA keeps the channels above H, so this is a copy" in src
    assert "out.transpose(0, 2, 1, 3)  # the reference's order: a copy" in src
    (call,) = _lower_again(worker, task, r, tmp_path, calls=1)
    assert call["dimension_semantics"] == ["parallel", "parallel"]
    bh = call["operands"][0]["block_shape"][1]
    assert call["grid"] == [8, -(-512 // bh)], call["grid"]
    assert call["vmem_bytes_per_step"] <= int(limit) * 1024 * 1024


def test_conv2d_ragged_small_instance_is_correct(worker, tmp_path):
    task = _task("conv2d_bias_silu.py", CONV_RAGGED)
    r = _generate(worker, task)
    assert r["class"] == "conv2d"
    _evaluate(worker, task, r, tmp_path, _set(r["source"], BLOCK_PIXELS=4 * 8))  # 4 rows of 8


# ---------------------------------------------------------------------------
# the task itself


def test_degenerate_task_gets_a_warning(worker):
    r = worker.request("generate", task=_task("degenerate_instance_norm.py"), timeout=300)
    warnings = r["warnings"] if r["ok"] else r["error"].get("warnings", [])
    assert warnings and all(w.startswith("degenerate task: `reduce_sum` (line 1") for w in warnings)
    assert "size-1 axes [2, 3]" in warnings[0] and "64x256x1x1" in warnings[0]
