"""generate: the GPU form of every template class (Pallas on GPU through Triton), on a CPU.

For each class, at a small instance: the module is written in the GPU form (kernel_form "gpu"),
lowers for CUDA (the op lowers it before it answers; the lower op's compile check lowers it for
CUDA again, since it cannot lower for TPU), and evaluate finds it correct in interpret mode
(interpret=True: the TPU interpreter takes TPU kernels only). The form follows the host: a CPU
worker writes the TPU form unless asked, and MAXKERNEL_KERNEL_FORM asks for it too.
"""

import os
import sys

import generate_rows_helpers as H
from worker_harness import ROOT, WorkerProcess, task_path

sys.path.insert(0, os.path.join(ROOT, "tpu", "worker"))

SEEDS = [5]


def _gpu(worker, task):
    r = worker.request("generate", task=task, kernel_form="gpu", timeout=300)
    assert r["ok"] is True, r.get("error", r)
    assert r["kernel_form"] == "gpu"
    assert r["lowering"] == {"ok": True, "seconds": r["lowering"]["seconds"], "platforms": ["cuda"]}
    src = r["source"]
    assert "from jax.experimental.pallas import triton as plgpu" in src
    assert "plgpu.CompilerParams(num_warps=NUM_WARPS" in src
    for tpu_only in ("pltpu", "dimension_semantics", "VMEM", "_fit_block("):
        assert tpu_only not in src, tpu_only
    assert "NUM_WARPS" in r["tunables"]
    return r


def _lower_and_evaluate(worker, task, r, tmp_path):
    f = tmp_path / "generated_gpu.py"
    f.write_text(r["source"], encoding="utf-8")
    lo = worker.request("lower", task=task, source=r["source"], filename=str(f),
                        kernel=r["entry"], target="tpu", timeout=300)
    assert lo["ok"] is True, lo.get("error")
    assert lo["lowered_for"] == "cuda"
    assert [c["compiler_params"] for c in lo["pallas_calls"]] == ["triton"]
    ev = worker.request("evaluate", task=task, source=r["source"], filename=str(f),
                        kernel=r["entry"], seeds=SEEDS, timing=False, timeout=300)
    assert ev["ok"] is True, ev.get("error")
    assert ev["correct"] is True, ev["failure"]
    assert ev["run_mode"] == {"mode": "interpret", "interpret_kind": "hlo", "platform": "cpu"}
    assert ev["time_kind"] == "interpret"
    return lo["pallas_calls"][0]


def _infile(*parts):
    return {"form": "infile", "path": task_path(*parts)}


def test_matmul_epilogue_gpu_form_loops_over_k_and_is_correct(worker, tmp_path):
    task = _infile("generate", "mm_bias_gelu.py")
    r = _gpu(worker, task)
    assert r["class"] == "matmul_epilogue"
    assert "jax.lax.fori_loop(0, k // bk, _k_step" in r["source"]
    call = _lower_and_evaluate(worker, task, r, tmp_path)
    _, k = call["operands"][0]["block_shape"]
    assert k == 512  # the whole K in the block: the loop walks it
    assert len(call["grid"]) == 2 and call["dimension_semantics"] is None
    assert all(v & (v - 1) == 0 for name in ("BLOCK_M", "BLOCK_N", "BLOCK_K")
               for v in r["tunables"][name]), r["tunables"]


def test_matmul_row_reduction_gpu_form_is_correct(worker, tmp_path):
    task = _infile("generate", "mm_cross_entropy.py")
    r = _gpu(worker, task)
    assert r["class"] == "matmul_row_reduction"
    assert "bn = n  # the whole row" in r["source"]
    _lower_and_evaluate(worker, task, r, tmp_path)


def test_elementwise_gpu_form_with_its_own_erf_is_correct(worker, tmp_path):
    task = _infile("generate", "ew_every_op.py")
    r = _gpu(worker, task)
    assert r["class"] == "elementwise"
    assert "def _erf(x):" in r["source"] and "jax.lax.erf" not in r["source"]
    _lower_and_evaluate(worker, task, r, tmp_path)


def test_rowwise_gpu_form_is_correct(worker, tmp_path):
    task = H.infile("rmsnorm.py")
    r = _gpu(worker, task)
    assert r["class"] == "rowwise"
    _lower_and_evaluate(worker, task, r, tmp_path)


def test_attention_gpu_form_causal_gqa_is_correct(worker, tmp_path):
    task = H.infile("attn_dpa_gqa.py")
    r = _gpu(worker, task)
    assert r["class"] == "attention"
    assert "_kv_step" in r["source"] and "jnp.minimum(jax.lax.div((qi + 1) * bq" in r["source"]
    call = _lower_and_evaluate(worker, task, r, tmp_path)
    assert len(call["grid"]) == 3  # (batch, heads, q blocks): the kv loop is inside


def test_rowwise_gpu_form_refuses_a_row_that_is_not_a_power_of_two(worker):
    task = H.infile("rmsnorm.py", ("B, S, H = 2, 32, 256", "B, S, H = 2, 32, 384"))
    r = worker.request("generate", task=task, kernel_form="gpu", timeout=300)
    assert r["ok"] is False and r["error"]["kind"] == "no_template", r.get("error")
    assert "GPU form: a row of 384 is not a power of two" in r["error"]["message"]
    # The TPU form writes it (384 is a multiple of 128).
    r = worker.request("generate", task=task, timeout=300)
    assert r["ok"] is True and r["kernel_form"] == "tpu" and "pltpu" in r["source"]


def test_the_form_follows_the_host_and_the_environment(worker):
    task = _infile("generate", "ew_gate.py")
    r = worker.request("generate", task=task, timeout=300)
    assert r["ok"] is True and r["kernel_form"] == "tpu"  # a CPU host: the TPU form
    bad = worker.request("generate", task=task, kernel_form="cuda", timeout=60)
    assert bad["ok"] is False and bad["error"]["kind"] == "bad_request"
    w = WorkerProcess(extra_env={"MAXKERNEL_KERNEL_FORM": "gpu"})
    try:
        r = w.request("generate", task=task, timeout=300)
        assert r["ok"] is True, r.get("error")
        assert r["kernel_form"] == "gpu" and "plgpu" in r["source"]
    finally:
        w.close()


def test_a_tpu_kernel_on_a_gpu_host_is_interpreted_and_says_so():
    from mkworker.judge import run

    tpu = [{"compiler_params": "tpu"}]
    gpu = [{"compiler_params": "triton"}]
    mode = run.choose_mode("gpu", tpu, None)
    assert (mode.kind, mode.interpret_kind, mode.time_kind) == ("interpret", "tpu", "interpret")
    assert mode.to_json()["note"] == run.TPU_KERNEL_ON_GPU
    assert run.RunMode.from_json(mode.to_json()).note == run.TPU_KERNEL_ON_GPU
    mode = run.choose_mode("gpu", gpu, None)
    assert (mode.kind, mode.time_kind) == ("device", "device") and "note" not in mode.to_json()
    assert run.choose_mode("cpu", gpu, None).interpret_kind == "hlo"
    assert run.choose_mode("cpu", tpu, None).interpret_kind == "tpu"


def test_autotune_lowers_each_gpu_config_for_cuda(worker, tmp_path):
    """The autotuner's compile check lowers a GPU-form module for CUDA (for TPU it cannot)."""
    task = _infile("generate", "mm_bias_gelu.py")
    r = _gpu(worker, task)
    f = tmp_path / "generated_gpu.py"
    f.write_text(r["source"], encoding="utf-8")
    at = worker.request("autotune", task=task, source=r["source"], filename=str(f),
                        kernel=r["entry"], space={"BLOCK_M": [16, 32]}, num_seeds=1,
                        timing={"warmup": 0, "min_runs": 1, "max_runs": 1, "min_seconds": 0,
                                "max_seconds": 0}, timeout=600)
    assert at["ok"] is True, at.get("error")
    got = sorted((x["config"]["BLOCK_M"], x["status"], x["correct"]) for x in at["results"])
    assert got == [(16, "ok", True), (32, "ok", True)], at["results"]
    assert all(x["run_mode"]["interpret_kind"] == "hlo" for x in at["results"])
