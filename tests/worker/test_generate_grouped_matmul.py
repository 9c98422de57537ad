"""generate: the grouped_matmul template (`jax.lax.ragged_dot`: x rows grouped by runtime group
sizes, one weight per group; the group metadata scalar-prefetched). Correct in interpret mode
with M tiles that straddle group boundaries, empty groups, sizes summing to less than M, a
ragged depth and ragged output columns, in bf16 with an epilogue; refused with the reason where
it does not apply; and at full size the kernel compiles for a v6e with the TPU compiler (libtpu,
no TPU)."""

import importlib.util

import generate_rows_helpers as H
import pytest
from worker_harness import WorkerProcess

NAME = "grouped_matmul.py"
BODY = "    return jax.lax.ragged_dot(x, w, group_sizes)\n"


def _task(m=200, k=300, n=200, sizes=(70, 0, 45, 85), dtype="float32", body=None):
    text = H.read_task(H.DIR, NAME)
    for old, new in (("M, K, N = 200, 300, 200", f"M, K, N = {m}, {k}, {n}"),
                     ("GROUP_SIZES = (70, 0, 45, 85)", f"GROUP_SIZES = {tuple(sizes)!r}"),
                     ("DTYPE = jnp.float32", f"DTYPE = jnp.{dtype}"),
                     (BODY, body or BODY)):
        assert old in text, old
        text = text.replace(old, new)
    return {"form": "infile", "source": text, "filename": H.task_path(H.DIR, NAME)}


CASES = [
    # (sizes, dtype, body, blocks): 32-row tiles straddle 70 and 115; an empty group; 200 rows
    # end mid-tile; K = 300 and N = 200 end mid-tile too
    ((70, 0, 45, 85), "float32", None, {"BLOCK_M": 32, "BLOCK_N": 128, "BLOCK_K": 128}),
    # leading and trailing empty groups, bf16, an activation and a scale fused after the dot
    ((0, 33, 100, 67, 0), "bfloat16",
     "    return jax.nn.gelu(jax.lax.ragged_dot(x, w, group_sizes)) * 0.5\n",
     {"BLOCK_M": 48, "BLOCK_N": 128, "BLOCK_K": 128}),
    # the sizes cover 110 of 200 rows: the rest (whole tiles included) come out as zeros
    ((50, 20, 0, 40), "float32", None, {"BLOCK_M": 32, "BLOCK_N": 256, "BLOCK_K": 256}),
]


@pytest.mark.parametrize("sizes, dtype, body, blocks", CASES,
                         ids=["straddling-f32", "bf16-gelu-empty-ends", "rows-past-the-groups"])
def test_grouped_matmul_is_correct_with_straddling_and_ragged_tiles(worker, tmp_path, sizes, dtype,
                                                                    body, blocks):
    task = _task(sizes=sizes, dtype=dtype, body=body)
    r = H.generate(worker, task)
    assert r["class"] == "grouped_matmul", r["class"]
    src = r["source"]
    assert "PrefetchScalarGridSpec" in src and "(group[v], kk, j)" in src
    for name, value in blocks.items():
        src = H.set_constant(src, name, value)
    H.evaluate(worker, task, r, tmp_path, source=src, seeds=[5])


@pytest.mark.parametrize("body, words, prims", [
    ("    return jnp.sum(jax.lax.ragged_dot(x, w, group_sizes), axis=-1)\n",
     "other than an elementwise epilogue", ["reduce_sum"]),
    ("    return jax.lax.ragged_dot(x, w, group_sizes) + jax.lax.ragged_dot(x, -w, group_sizes)\n",
     "2 ragged dots", ["ragged_dot_general"]),
], ids=["row-sum-after", "two-ragged-dots"])
def test_what_the_grouped_matmul_template_does_not_cover_is_refused(worker, body, words, prims):
    err = H.refusal(worker, _task(body=body))
    assert "grouped_matmul" in err["message"] and words in err["message"], err["message"]
    assert err["primitives"] == prims, err


@pytest.mark.skipif(importlib.util.find_spec("libtpu") is None,
                    reason="declared: libtpu is not installed (pip install -r scripts/requirements.txt)")
def test_the_full_size_kernel_compiles_for_tpu(tmp_path):
    # 8 experts, 8192 tokens, 4096 -> 14336 in bf16 (the MoE up projection), with cycles on v5e
    # and v6e: the visit vectors are held in HBM (see the next test).
    task = _task(m=8192, k=4096, n=14336, sizes=(1024,) * 8, dtype="bfloat16")
    w = WorkerProcess(extra_env={"MAXKERNEL_TPU_COMPILE": "1"})
    try:
        r = H.generate(w, task)
        assert r["class"] == "grouped_matmul"
        for generation in ("v5e", "v6e"):
            H.assert_compiles_with_cycles(w, task, r, tmp_path, generation)
    finally:
        w.close()


@pytest.mark.skipif(importlib.util.find_spec("libtpu") is None,
                    reason="declared: libtpu is not installed (pip install -r scripts/requirements.txt)")
def test_on_v5e_a_profile_abort_still_leaves_the_compile_check(tmp_path):
    # Left where XLA puts them (VMEM), the visit vectors' copy into SMEM aborts libtpu 0.0.42.1's
    # static profile on v5e ("Unsupported DMA direction"): the compiler is run again without the
    # profile, so the kernel is still checked (no cycles).
    task = _task(m=512, k=256, n=512, sizes=(128,) * 4, dtype="bfloat16")
    w = WorkerProcess(extra_env={"MAXKERNEL_TPU_COMPILE": "1"})
    try:
        r = H.generate(w, task)
        held = "pltpu.with_memory_space_constraint(a, pltpu.MemorySpace.HBM)"
        assert held in r["source"]
        r = dict(r, source=r["source"].replace(held, "a"))
        cand = H.compile_for_tpu(w, task, r, tmp_path, "v5e", time_s=300)
        assert cand["status"] == "compiled", cand
        assert "cycles" not in cand and "aborted" in cand["cycles_note"], {k: v for k, v in cand.items() if k != "profile_crash"}
        assert "DMA" in cand["profile_crash"] or "exit" in cand["profile_crash"], cand
    finally:
        w.close()
