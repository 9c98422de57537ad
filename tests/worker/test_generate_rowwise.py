"""generate: rowwise references (row norms, softmax, logsumexp, row reductions + epilogues).

For each reference: at FULL size the generated module lowers for TPU (the op lowers it before it
answers; the test lowers the returned text again with the lower op and reads its facts);
generated for a SMALL instance, the module passes evaluate in interpret mode, with a BLOCK_ROWS
that makes several grid steps. Refusals: a reduction over another axis, a row too long for VMEM.
"""

import generate_rows_helpers as H

RMS_FULL = ("B, S, H = 2, 32, 256", "B, S, H = 8, 4096, 8192")


def test_rmsnorm_3d_bf16_full_size_lowers(worker, tmp_path):
    task = H.infile("rmsnorm.py", RMS_FULL)
    r = H.generate(worker, task)
    assert r["class"] == "rowwise"
    assert r["description"].startswith("RMSNorm over 32768 rows of 8192 (bfloat16)")
    src = r["source"]
    assert "def candidate(x, w, eps):" in src
    assert "functools.partial(_row_kernel, eps=eps)" in src  # the static eps reaches the kernel
    assert "float(n)" in src and "8192" not in src.split("def candidate")[0].split("BLOCK_ROWS =")[1]
    assert "x.reshape(m, n)" in src and "out.reshape(*lead, n)" in src  # (batch, seq) flattened
    # bf16 blocks: rows in multiples of 16 dividing the 32768 rows.
    assert r["tunables"]["BLOCK_ROWS"] and all(
        b % 16 == 0 and 32768 % b == 0 for b in r["tunables"]["BLOCK_ROWS"]), r["tunables"]
    call = H.lower_again(worker, task, r, tmp_path)
    br = call["operands"][0]["block_shape"][0]
    assert br in r["tunables"]["BLOCK_ROWS"]
    assert call["grid"] == [32768 // br]
    assert call["dimension_semantics"] == ["parallel"]
    assert [o["block_shape"] for o in call["operands"]] == [[br, 8192], [1, 8192], [br, 8192]]
    assert call["operands"][-1]["dtype"] == "bfloat16"
    # The kernel sets vmem_limit_bytes from its plan, within v5e's 128 MiB: the static
    # analysis' per-step VMEM fits under it.
    assert call["vmem_limit_bytes"] <= 128 * 1024 * 1024
    assert call["vmem_bytes_per_step"] <= call["vmem_limit_bytes"]


def test_rmsnorm_small_instance_is_correct(worker, tmp_path):
    task = H.infile("rmsnorm.py")
    r = H.generate(worker, task)
    assert r["class"] == "rowwise" and r["tunables"]["BLOCK_ROWS"][0] == 16
    src = H.set_constant(r["source"], "BLOCK_ROWS", 16)  # 4 grid steps over the 64 rows
    H.evaluate(worker, task, r, tmp_path, source=src)


LN_FULL = ("rows, hidden = 64, 512", "rows, hidden = 8192, 8192")


def test_layernorm_maxkernel_full_size_lowers(worker, tmp_path):
    task = H.maxkernel(tmp_path, "maxkernel_layernorm", LN_FULL)
    r = H.generate(worker, task)
    assert r["class"] == "rowwise" and r["entry"] == "computation"
    assert "LayerNorm over 8192 rows of 8192 (float32)" in r["description"]
    assert "def computation(x, weight, bias, eps):" in r["source"]
    call = H.lower_again(worker, task, r, tmp_path)
    br = call["operands"][0]["block_shape"][0]
    # weight and bias are their own (1, n) blocks, read at block (0, 0) every step
    assert [o["block_shape"] for o in call["operands"]] == [[br, 8192], [1, 8192], [1, 8192],
                                                             [br, 8192]]
    assert call["grid"] == [8192 // br] and br % 8 == 0
    # The kernel sets vmem_limit_bytes from its plan, within v5e's 128 MiB: the static
    # analysis' per-step VMEM fits under it.
    assert call["vmem_limit_bytes"] <= 128 * 1024 * 1024
    assert call["vmem_bytes_per_step"] <= call["vmem_limit_bytes"]


def test_layernorm_maxkernel_small_instance_is_correct(worker, tmp_path):
    task = H.maxkernel(tmp_path, "maxkernel_layernorm")
    r = H.generate(worker, task)
    H.evaluate(worker, task, r, tmp_path, source=H.set_constant(r["source"], "BLOCK_ROWS", 8))


def test_layernorm_larger_module_runs_at_a_shrunk_instance(worker, tmp_path):
    """Generated for 512 x 2048, run by evaluate at a 4x smaller instance (128 x 512): the
    mean and variance divide by the row length of the block, not by a baked-in 2048."""
    task = H.maxkernel(tmp_path, "maxkernel_layernorm",
                       ("rows, hidden = 64, 512", "rows, hidden = 512, 2048"))
    r = H.generate(worker, task)
    assert "2048" not in r["body"].split("def computation")[0].split("BLOCK_ROWS =")[1]
    ev = H.evaluate(worker, task, r, tmp_path, shrink={"factor": 4, "min_dim": 64})
    assert ev["instance"]["kind"] == "shrunk", ev["instance"]


SOFTMAX_FULL = ('CONFIG = {"rows": 128, "cols": 384', 'CONFIG = {"rows": 32768, "cols": 4096')


def test_softmax_epilogue_jaxbench_full_size_lowers(worker, tmp_path):
    task = H.jaxbench("jaxbench_softmax_gate", SOFTMAX_FULL)
    r = H.generate(worker, task)
    assert r["class"] == "rowwise" and r["entry"] == "workload"
    assert r["description"].startswith("softmax over 32768 rows of 4096")
    src = r["source"]
    # the epilogue (gate row, scale, clamp) is fused after the normalisation
    assert "jnp.exp(" in src and "jnp.minimum(" in src and "gate.reshape(1, n)" in src
    call = H.lower_again(worker, task, r, tmp_path)
    br = call["operands"][0]["block_shape"][0]
    assert call["grid"] == [32768 // br]
    assert call["operands"][1]["block_shape"] == [1, 4096]


def test_softmax_epilogue_jaxbench_small_instance_is_correct(worker, tmp_path):
    task = H.jaxbench("jaxbench_softmax_gate")
    r = H.generate(worker, task)
    H.evaluate(worker, task, r, tmp_path, source=H.set_constant(r["source"], "BLOCK_ROWS", 32))


def test_row_statistics_several_outputs_small_instance_is_correct(worker, tmp_path):
    """logsumexp, max (one value per row, no keepdims) and an L2 norm (keepdims) as three
    outputs of one kernel."""
    task = H.infile("row_stats.py")
    r = H.generate(worker, task)
    assert r["class"] == "rowwise"
    src = r["source"]
    assert "out[0].reshape(lead)" in src and "out[2].reshape(*lead, 1)" in src
    call = H.lower_again(worker, task, r, tmp_path)
    assert [o["block_shape"][1] for o in call["operands"]] == [256, 1, 1, 1]
    H.evaluate(worker, task, r, tmp_path, source=H.set_constant(src, "BLOCK_ROWS", 16))


def test_softmax_over_the_first_axis_is_refused(worker):
    err = H.refusal(worker, H.infile("refuse/column_softmax.py"))
    assert "reduces axes (0,)" in err["message"] and "last axis" in err["message"]
    assert err["primitives"] == ["reduce_max"]
    assert err["locations"] and err["locations"][0]["line"] == 8, err


def test_row_too_long_for_vmem_is_refused(worker):
    # 8 rows of 128256 f32 with their buffers need ~20 MiB: over v4's 16 MiB VMEM a core...
    task = H.infile("refuse/vocab_logsumexp.py")
    r = worker.request("generate", task=task, target="v4", timeout=300)
    assert r["ok"] is False, r.get("class")
    err = r["error"]
    assert "128256" in err["message"] and "VMEM" in err["message"]
    assert "two passes" in err["message"] and "LLM" in err["message"]
    # ...but within v5e's 128 MiB (the default target), whose budget comes from the generation.
    ok = H.generate(worker, task)
    assert ok["class"] == "rowwise" and "vmem_limit_bytes=" in ok["source"]


def test_smaller_vmem_target_gives_fewer_rows(worker):
    task = H.infile("rmsnorm.py", RMS_FULL)
    big = H.generate(worker, task)
    small = H.generate(worker, task, target={"name": "tiny", "vmem_limit_bytes": 4 * 1024 * 1024})
    assert max(small["tunables"]["BLOCK_ROWS"]) < max(big["tunables"]["BLOCK_ROWS"])
    assert max(small["tunables"]["BLOCK_ROWS"]) == 16
