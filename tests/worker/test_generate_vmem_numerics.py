"""In-process checks of the generator's target rules and kernel numerics (no worker process):
VMEM from the target generation, vmem_limit_bytes from the plan, the dot precision Mosaic
accepts, and the flash kernel's online softmax on a fully masked row (no NaN)."""

import json
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from worker_harness import ROOT

sys.path.insert(0, os.path.join(ROOT, "tpu", "worker"))

from mkworker.generate.templates import attention_tpu as A
from mkworker.generate import common as G

MIB = 1024 * 1024


def test_generation_vmem_matches_the_knowledge_table():
    with open(os.path.join(ROOT, "knowledge", "data", "tpu_generations.json")) as f:
        table = json.load(f)
    for gen in table["generations"]:
        assert G.GENERATION_VMEM[gen["name"]] == gen["vmem_bytes"], gen["name"]
        for alias in gen["aliases"]:
            assert G.generation_of(alias) == gen["name"], alias
    assert G.target_vmem_capacity({"name": "v5e"}) == 128 * MIB
    assert G.target_vmem_capacity({"name": "TPU v6 lite"}) == 128 * MIB
    assert G.target_vmem_capacity({"name": "v7x"}) == 64 * MIB
    # An explicit limit wins; an unknown generation plans for the 16 MiB scoped default.
    assert G.target_vmem_capacity({"name": "v5e", "vmem_limit_bytes": 4 * MIB}) == 4 * MIB
    assert G.target_vmem_capacity({"name": "tiny"}) == 16 * MIB


def test_vmem_limit_covers_the_plan_within_capacity():
    cap = 128 * MIB
    for plan in (1, 3 * MIB, 20 * MIB + 7, 90 * MIB, 200 * MIB):
        limit = G.vmem_limit_for(plan, cap)
        assert limit % MIB == 0 and 16 * MIB <= limit <= cap
        if plan * G.VMEM_LIMIT_FACTOR + G.VMEM_LIMIT_SLACK <= cap:
            assert limit >= plan * G.VMEM_LIMIT_FACTOR
    assert G.vmem_limit_for(1, 8 * MIB) == 8 * MIB  # never above a small target's capacity


def test_mosaic_gets_only_default_or_highest_precision():
    P = jax.lax.Precision
    assert G.mosaic_precision_code([None, None]) is None
    assert G.mosaic_precision_code([(P.DEFAULT, P.DEFAULT)]) is None
    # Mosaic rejects HIGH: the kernel asks for HIGHEST (never less precise than the reference).
    assert G.mosaic_precision_code([(P.HIGH, P.HIGH)]) == "jax.lax.Precision.HIGHEST"
    assert G.mosaic_precision_code([None, (P.DEFAULT, P.HIGHEST)]) == "jax.lax.Precision.HIGHEST"


def _flash_module(causal):
    ns = {"jax": jax, "jnp": jnp, "pl": pl, "pltpu": pltpu}
    exec(A._kernel_text(causal, fold_scale=True, precision=None), ns)  # noqa: S102
    return ns


def test_fully_masked_block_first_gives_no_nan():
    """A row whose first kv block is fully masked (m still at its initial value) must come out
    finite, and the next block's real scores must wipe what the masked block added."""
    ns = _flash_module(causal=True)
    bq, bk, d = 8, 128, 128
    rng = np.random.default_rng(0)
    q = jnp.asarray(rng.standard_normal((bq, d)), jnp.float32)
    k = jnp.asarray(rng.standard_normal((2 * bk, d)), jnp.float32)
    v = jnp.asarray(rng.standard_normal((2 * bk, d)), jnp.float32)
    keep = np.ones((bq, 2 * bk), bool)
    keep[:, :bk] = False  # every row's first block masked
    keep[0, :] = False  # row 0 masked everywhere
    keep = jnp.asarray(keep)

    def kernel(q_ref, k_ref, v_ref, keep_ref, o_ref, m_ref, l_ref, acc_ref):
        ki = pl.program_id(0)

        @pl.when(ki == 0)
        def _init():
            m_ref[...] = jnp.full(m_ref.shape, ns["MASK_VALUE"], jnp.float32)
            l_ref[...] = jnp.zeros(l_ref.shape, jnp.float32)
            acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)

        ns["_online_softmax_step"](q_ref[...], k_ref, v_ref, m_ref, l_ref, acc_ref, scale=1.0,
                                   keep=keep_ref[...])

        @pl.when(ki == 1)
        def _finish():
            o_ref[...] = acc_ref[...] / l_ref[...][:, :1]

    out = pl.pallas_call(
        kernel, grid=(2,),
        in_specs=[pl.BlockSpec((bq, d), lambda i: (0, 0)), pl.BlockSpec((bk, d), lambda i: (i, 0)),
                  pl.BlockSpec((bk, d), lambda i: (i, 0)), pl.BlockSpec((bq, bk), lambda i: (0, i))],
        out_specs=pl.BlockSpec((bq, d), lambda i: (0, 0)),
        out_shape=jax.ShapeDtypeStruct((bq, d), jnp.float32),
        scratch_shapes=[pltpu.VMEM((bq, 128), jnp.float32), pltpu.VMEM((bq, 128), jnp.float32),
                        pltpu.VMEM((bq, d), jnp.float32)],
        interpret=True)(q, k, v, keep)
    out = np.asarray(out)
    assert np.isfinite(out).all()
    # Rows 1..: softmax over the second block only (the masked block's exp(0) terms are wiped).
    s = np.asarray(q) @ np.asarray(k[bk:]).T
    p = np.exp(s - s.max(-1, keepdims=True))
    want = (p / p.sum(-1, keepdims=True)) @ np.asarray(v[bk:])
    np.testing.assert_allclose(out[1:], want[1:], rtol=2e-2, atol=2e-2)
    # Row 0 (masked everywhere): the mean of v, finite, as a finite-fill reference gives.
    np.testing.assert_allclose(out[0], np.asarray(v).mean(0), rtol=2e-2, atol=2e-2)


def test_causal_kernel_masks_only_diagonal_blocks():
    text = A._kernel_text(True, fold_scale=True, precision=None)
    assert "-jnp.inf" not in text and "MASK_VALUE" in text
    # One masked call (the diagonal), one unmasked (wholly below); the scale multiplies q.
    assert text.count("keep=cols <= rows") == 1
    assert text.count("_online_softmax_step(q, k_ref, v_ref, m_ref, l_ref, acc_ref, scale=scale") == 2
    assert "q_ref[...] * scale" in text and "s = s * scale" not in text
    bf16 = A._kernel_text(False, fold_scale=False, precision="jax.lax.Precision.HIGHEST")
    assert "s = s * scale" in bf16 and "precision=jax.lax.Precision.HIGHEST" in bf16
