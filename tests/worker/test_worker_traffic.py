"""lower: per-pallas_call HBM traffic (`traffic`), from walking the grid.

The worker-process tests use task files in tasks/traffic/ and numbers
derived by hand (see each file's docstring).  The in-process tests check
the index-map evaluators (numpy interpreter, jax.vmap, Python loop) against
a brute-force walk that calls the index-map functions directly.
"""

import itertools
import os
import sys

import pytest
from worker_harness import ROOT, WorkerProcess, read_task, task_path

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.join(ROOT, "tpu", "worker"))

import jax
import jax.numpy as jnp
from mkworker.cost import facts as cost_facts
from mkworker.cost import traffic
from jax.experimental import pallas as pl


def _lower(worker, name, target="tpu"):
    r = worker.request("lower", source=read_task("traffic", name), filename=task_path("traffic", name),
                       task={"form": "infile"}, target=target)
    assert r["ok"] is True, r
    assert r["num_pallas_calls"] == 1
    return r["pallas_calls"][0]["traffic"]


def _ops(t):
    return {(o["role"], o["index"]): o for o in t["operands"]}


# ---------------------------------------------------------------------------
# Through the worker.

def test_traffic_tiled_matmul(worker):
    t = _lower(worker, "matmul.py")
    block = 128 * 128 * 4
    assert t["available"] is True
    assert t["grid_steps"] == 2 * 2 * 4
    # Within the cap every step is evaluated once per operand.
    assert [o["evaluated_points"] for o in t["operands"]] == [16, 16, 16]
    assert t["evaluated_points"] == 48
    assert t["traffic_estimated"] is False
    assert t["assumed_prefetch_zeros"] is False
    ops = _ops(t)
    a, b, out = ops[("input", 0)], ops[("input", 1)], ops[("output", 0)]
    # A (i, k): k is the fastest axis, so the index changes at every step.
    assert a["mode"] == "blocked" and a["fetches"] == 16 and a["block_bytes"] == block
    assert a["hbm_bytes"] == 16 * block
    assert a["distinct_blocks"] == 2 * 4
    # B (k, j): likewise.
    assert b["fetches"] == 16 and b["hbm_bytes"] == 16 * block and b["distinct_blocks"] == 4 * 2
    # out (i, j): one run of 4 k-steps per (i, j).
    assert out["writebacks"] == 4 and out["hbm_bytes"] == 4 * block and out["distinct_blocks"] == 4
    assert "fetches" not in out
    assert t["hbm_bytes_read"] == 32 * block == 2 * 1024 * 1024
    assert t["hbm_bytes_written"] == 4 * block == 256 * 256 * 4
    assert t["hbm_bytes_read_in_bounds"] == t["hbm_bytes_read"]
    assert t["hbm_bytes_written_in_bounds"] == t["hbm_bytes_written"]
    assert all(o["method"] == "numpy" for o in t["operands"])


def test_traffic_elementwise(worker):
    t = _lower(worker, "elementwise.py")
    block = 8 * 128 * 4
    assert t["grid_steps"] == 8 and t["traffic_estimated"] is False
    ops = _ops(t)
    assert ops[("input", 0)]["fetches"] == 8
    assert ops[("input", 1)]["fetches"] == 8
    assert ops[("output", 0)]["writebacks"] == 8
    assert t["hbm_bytes_read"] == 2 * 8 * block == 2 * 64 * 128 * 4
    assert t["hbm_bytes_written"] == 8 * block == 64 * 128 * 4


def test_traffic_constant_block_index_fetched_once(worker):
    t = _lower(worker, "const_block.py")
    block = 8 * 128 * 4
    ops = _ops(t)
    assert ops[("input", 0)]["fetches"] == 4
    bias = ops[("input", 1)]
    assert bias["fetches"] == 1 and bias["hbm_bytes"] == block and bias["distinct_blocks"] == 1
    assert ops[("output", 0)]["writebacks"] == 4
    assert t["hbm_bytes_read"] == 5 * block
    assert t["hbm_bytes_written"] == 4 * block


def test_traffic_prefetch_manual_and_ragged(worker):
    # (Cross-lowering scalar prefetch for TPU needs a TPU device kind, so
    # this one is lowered natively; the traffic comes from the trace anyway.)
    t = _lower(worker, "prefetch_manual.py", target="native")
    block = 32 * 128 * 4
    row = 128 * 4
    assert t["grid_steps"] == 4
    assert t["assumed_prefetch_zeros"] is True
    ops = _ops(t)
    x, w, y, out = ops[("input", 0)], ops[("input", 1)], ops[("input", 2)], ops[("output", 0)]
    # idx[i] taken as 0: x's block index is always (0, 0).
    assert x["assumed_prefetch_zeros"] is True and x["fetches"] == 1
    assert x["hbm_bytes"] == x["hbm_bytes_in_bounds"] == block
    # memory_space=ANY: not pipelined, not counted.
    assert w["mode"] == "manual" and w["memory_space"] == "any"
    assert "fetches" not in w and "hbm_bytes" not in w
    # y (3 - i, 0): 4 fetches; the block at row 96 holds 4 rows of the 100.
    assert y["fetches"] == 4 and "assumed_prefetch_zeros" not in y
    assert y["hbm_bytes"] == 4 * block
    assert y["hbm_bytes_in_bounds"] == 100 * row
    # out (i // 2, 0): blocks 0, 0, 1, 1: 2 writebacks, both fully inside.
    assert out["writebacks"] == 2 and out["hbm_bytes_in_bounds"] == 2 * block
    assert t["hbm_bytes_read"] == 5 * block
    assert t["hbm_bytes_read_in_bounds"] == block + 100 * row
    assert t["hbm_bytes_written"] == t["hbm_bytes_written_in_bounds"] == 2 * block


def test_traffic_cap_from_environment_samples():
    w = WorkerProcess(extra_env={"MAXKERNEL_WORKER_TRAFFIC_MAX_STEPS": "8"})
    try:
        t = _lower(w, "matmul.py")
    finally:
        w.close()
    assert t["grid_steps"] == 16
    assert t["traffic_estimated"] is True
    ops = _ops(t)
    a, b, out = ops[("input", 0)], ops[("input", 1)], ops[("output", 0)]
    # A (i, k) reads axes 0 and 2. Transitions: i increments once, j twice
    # (k wraps, so A's index may change: one evaluation per i value), k 12
    # times (2 * 3 (i, k) combinations). 1 + 2 + 6 = 9 > the budget of
    # (8 - 2) / 2 = 3 evaluated transitions: sampled.
    assert a["grid_axes_read"] == [0, 2]
    assert a["traffic_estimated"] is True and a["distinct_blocks"] is None
    assert a["sampling"]["transitions"] == 15 and a["sampling"]["evaluated_transitions"] == 3
    assert [(x["axis"], x["transitions"]) for x in a["sampling"]["axes"]] == [(0, 1), (1, 2), (2, 12)]
    assert a["evaluated_points"] == 2 * 3 + 2
    # A and B change at every transition, so even this sample is exact.
    assert a["fetches"] == 16 and b["fetches"] == 16
    # out (i, j): 1 + 2 combinations, k transitions never change it: exact.
    assert out["grid_axes_read"] == [0, 1]
    assert out["traffic_estimated"] is False and out["writebacks"] == 4 and out["distinct_blocks"] == 4
    assert "sampling" not in out


# ---------------------------------------------------------------------------
# In process: evaluators against a brute-force walk.

def _copy_kernel(*refs):
    refs[-1][...] = jnp.zeros(refs[-1].shape, refs[-1].dtype)


def _call_jaxpr(grid, in_maps, out_map, block=(8, 128), array=None, out_pipeline=None):
    array = array or (block[0] * 8, block[1] * 8)

    def f(*xs):
        return pl.pallas_call(
            _copy_kernel,
            out_shape=jax.ShapeDtypeStruct(array, jnp.float32),
            grid=grid,
            in_specs=[pl.BlockSpec(block, m) for m in in_maps],
            out_specs=pl.BlockSpec(block, out_map, pipeline_mode=out_pipeline),
        )(*xs)

    return jax.jit(f).trace(*[jax.ShapeDtypeStruct(array, jnp.float32)] * len(in_maps)).jaxpr


def _pallas_eqn(closed):
    return cost_facts.pallas_eqns(closed)[0][0]


def _brute_force(grid, index_map):
    """(changes + 1) of the index sequence, calling the map on Python ints."""
    prev, count = None, 0
    for g in itertools.product(*[range(n) for n in grid]):
        idx = tuple(int(v) for v in index_map(*[jnp.int32(x) for x in g]))
        if idx != prev:
            count += 1
        prev = idx
    return count


INDEX_MAPS = {
    "identity": lambda i, j: (i, j),
    "floor_div_mod": lambda i, j: ((i * 6 + j) // 4, (i + j) % 3),
    "where": lambda i, j: (jnp.where(i % 2 == 0, j, 5 - j), 0),
    "trunc_div_rem_negative": lambda i, j: (jax.lax.div(i - 2, 3) + 1, jax.lax.rem(j - 3, 2) + 1),
    "shifts": lambda i, j: (i >> 1, (j << 1) + jax.lax.shift_right_logical(j - 3, 30)),
    "clip_min_max": lambda i, j: (jnp.clip(j - 1, 0, 3), jnp.maximum(i, 2) - jnp.minimum(j, 1)),
    "pow_compare": lambda i, j: ((i ** 2) % 5, (j > i).astype(jnp.int32) + (j == 2)),
    "constant": lambda i, j: (0, 0),
}


@pytest.mark.parametrize("name", sorted(INDEX_MAPS))
def test_evaluators_agree_with_brute_force(name):
    grid = (4, 6)
    imap = INDEX_MAPS[name]
    closed = _call_jaxpr(grid, [imap], lambda i, j: (i, 0))
    eqn = _pallas_eqn(closed)
    facts = cost_facts.pallas_call_facts(eqn)
    want_in = _brute_force(grid, imap)
    assert facts["traffic"]["operands"][0]["fetches"] == want_in
    assert facts["traffic"]["operands"][0]["method"] == "numpy"
    assert facts["traffic"]["operands"][1]["writebacks"] == 4
    for method in ("numpy", "vmap", "loop"):
        t = traffic.pallas_call_traffic(eqn.params["grid_mapping"], facts["operands"], methods=(method,))
        assert t["operands"][0]["fetches"] == want_in, method
        assert t["operands"][0]["method"] == method
        assert t["operands"][1]["writebacks"] == 4, method
        assert t["operands"][0]["distinct_blocks"] == facts["traffic"]["operands"][0]["distinct_blocks"]


MAPS_3D = {
    "a_ik": lambda i, j, k: (i, k),
    "b_kj": lambda i, j, k: (k, j),
    "out_ij": lambda i, j, k: (i, j),
    "j_half": lambda i, j, k: (j // 2, 0),
    "i_plus_k_mod": lambda i, j, k: (0, (i + k) % 3),
    "k_parity": lambda i, j, k: (k % 2, 0),
    "constant": lambda i, j, k: (0, 0),
}


@pytest.mark.parametrize("name", sorted(MAPS_3D))
def test_pairs_plan_matches_the_full_walk(name):
    """The transition-pairs plan (used above the cap) gives the same exact
    numbers as walking every step, for maps that read some of the axes."""
    grid = (3, 4, 5)
    imap = MAPS_3D[name]
    closed = _call_jaxpr(grid, [imap], imap, array=(20, 300))  # ragged edge blocks
    eqn = _pallas_eqn(closed)
    ops = cost_facts.pallas_call_facts(eqn)["operands"]
    walk = traffic.pallas_call_traffic(eqn.params["grid_mapping"], ops)
    pairs = traffic.pallas_call_traffic(eqn.params["grid_mapping"], ops, force_pairs=True)
    want = _brute_force(grid, imap)
    assert walk["operands"][0]["fetches"] == pairs["operands"][0]["fetches"] == want
    assert walk["operands"][1]["writebacks"] == pairs["operands"][1]["writebacks"] == want
    assert pairs["traffic_estimated"] is False
    for key in ("distinct_blocks", "hbm_bytes", "hbm_bytes_in_bounds"):
        assert walk["operands"][0][key] == pairs["operands"][0][key], key
        assert walk["operands"][1][key] == pairs["operands"][1][key], key
    assert pairs["operands"][0]["evaluated_points"] <= 2 * (60 - 1) + 2


def test_unknown_primitive_falls_back_to_vmap():
    grid = (4, 6)

    def imap(i, j):
        return (jnp.sqrt((i * 6 + j).astype(jnp.float32)).astype(jnp.int32), 0)

    closed = _call_jaxpr(grid, [imap], lambda i, j: (i, 0))
    t = cost_facts.all_facts(closed)[0]["traffic"]
    op = t["operands"][0]
    assert op["method"] == "vmap"
    assert op["fetches"] == _brute_force(grid, imap) == 5  # floor(sqrt(0..23)) = 0..4


def test_sampling_extrapolates_and_says_so():
    grid = (64, 64)
    closed = _call_jaxpr(grid, [lambda i, j: (i, j), lambda i, j: (i, j // 8)], lambda i, j: (i, 0),
                         array=(8 * 64, 128 * 64))
    eqn = _pallas_eqn(closed)
    ops = cost_facts.pallas_call_facts(eqn)["operands"]
    exact = traffic.pallas_call_traffic(eqn.params["grid_mapping"], ops)
    assert exact["traffic_estimated"] is False
    assert [o.get("fetches") or o.get("writebacks") for o in exact["operands"]] == [4096, 512, 64]
    t = traffic.pallas_call_traffic(eqn.params["grid_mapping"], ops, max_steps=512)
    assert t["traffic_estimated"] is True
    assert t["grid_steps"] == 4096
    a, b, out = t["operands"]
    # (i, j): the 63 transitions of axis 0 are all evaluated, 192 of the
    # 64 * 63 of axis 1 (the budget is (512 - 2) / 2 = 255 transitions).
    assert a["sampling"]["axes"] == [{"axis": 0, "transitions": 63, "evaluated": 63, "exact": True},
                                     {"axis": 1, "transitions": 4032, "evaluated": 192, "exact": False}]
    assert a["evaluated_points"] == 2 * 255 + 2
    assert a["fetches"] == 4096  # every step changes: exact even when sampled
    # (i, j // 8) changes at 1/8 of the axis-1 transitions: 192 samples
    # give about +-20% (one sigma) on those 448; the seed is fixed.
    assert abs(b["fetches"] - 512) <= 0.3 * 448
    assert b["traffic_estimated"] is True and b["distinct_blocks"] is None
    # (i, 0) reads only axis 0: its 63 transitions are all it takes.
    assert out["traffic_estimated"] is False and out["writebacks"] == 64 and out["evaluated_points"] == 128
    assert t["hbm_bytes_read"] == (a["fetches"] + b["fetches"]) * 8 * 128 * 4


def test_separable_index_maps_are_exact_beyond_the_cap():
    # 2**24 grid steps, far above the cap: K's and Q's block indices read
    # few axes, so the count stays exact (flash-attention-like grid).
    grid = (4, 8, 512, 1024)  # (batch, head, q block, k block)
    closed = _call_jaxpr(grid, [lambda b, h, q, k: (b * 8 + h, q), lambda b, h, q, k: (b * 8 + h, k)],
                         lambda b, h, q, k: (b * 8 + h, q), array=(8 * 32, 128 * 1024))
    t = cost_facts.all_facts(closed)[0]["traffic"]
    q_op, k_op, out = t["operands"]
    assert t["grid_steps"] == 2 ** 24
    assert q_op["traffic_estimated"] is False and q_op["fetches"] == 4 * 8 * 512
    # K's index changes at every step (k is the fastest axis).
    assert k_op["traffic_estimated"] is False and k_op["fetches"] == 2 ** 24
    assert k_op["distinct_blocks"] == 4 * 8 * 1024
    assert out["traffic_estimated"] is False and out["writebacks"] == 4 * 8 * 512
    # Q: one evaluation pair per (b, h, q) transition: 3 + 4 * 7 + 32 * 511.
    assert q_op["evaluated_points"] == 2 * (3 + 28 + 32 * 511) + 2


def test_large_grid_is_walked_quickly():
    import time
    grid = (1024, 1024)  # exactly MAX_STEPS = 2**20 steps
    closed = _call_jaxpr(grid, [lambda i, j: (i, j // 8)], lambda i, j: (i, j), array=(8 * 1024, 128 * 1024))
    t0 = time.perf_counter()
    t = cost_facts.all_facts(closed)[0]["traffic"]
    elapsed = time.perf_counter() - t0
    assert t["traffic_estimated"] is False and t["evaluated_points"] == 2 * 2 ** 20
    assert t["operands"][0]["fetches"] == 1024 * 128
    assert t["operands"][1]["writebacks"] == 2 ** 20
    assert elapsed < 5.0, elapsed


def test_vmapped_pallas_call_walks_the_batch_axis():
    def f(x):
        return pl.pallas_call(
            _copy_kernel, out_shape=jax.ShapeDtypeStruct((64, 128), jnp.float32), grid=(8,),
            in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))],
            out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)))(x)

    closed = jax.jit(jax.vmap(f)).trace(jax.ShapeDtypeStruct((3, 64, 128), jnp.float32)).jaxpr
    facts = cost_facts.all_facts(closed)[0]
    t = facts["traffic"]
    assert t["grid_steps"] == 24
    assert t["operands"][0]["fetches"] == 24
    assert t["operands"][1]["writebacks"] == 24


def test_grid_free_call_moves_each_operand_once():
    def f(x):
        return pl.pallas_call(_copy_kernel, out_shape=jax.ShapeDtypeStruct((16, 128), jnp.float32))(x)

    closed = jax.jit(f).trace(jax.ShapeDtypeStruct((16, 128), jnp.float32)).jaxpr
    t = cost_facts.all_facts(closed)[0]["traffic"]
    assert t["grid_steps"] == 1
    assert t["operands"][0]["fetches"] == 1 and t["operands"][1]["writebacks"] == 1
    assert t["hbm_bytes_read"] == t["hbm_bytes_written"] == 16 * 128 * 4


def test_revisit_any_output_reads_blocks_back():
    # Output block (j, 0) over grid (2, 4): 0 1 2 3 0 1 2 3 -> 8 writebacks
    # of 4 distinct blocks; with RevisitMode.ANY the 4 revisits read back.
    closed = _call_jaxpr((2, 4), [lambda i, j: (i, j)], lambda i, j: (j, 0),
                         out_pipeline=pl.Buffered(1, revisit=pl.RevisitMode.ANY))
    t = cost_facts.all_facts(closed)[0]["traffic"]
    block = 8 * 128 * 4
    out = t["operands"][1]
    assert out["writebacks"] == 8 and out["distinct_blocks"] == 4 and out["revisit_fetches"] == 4
    assert t["hbm_bytes_read"] == 8 * block + 4 * block
    assert t["hbm_bytes_written"] == 8 * block
