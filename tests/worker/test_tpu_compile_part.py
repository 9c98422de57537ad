"""tpu_compiler.part: a program too large for libtpu's static profile at full size is compiled
with the task's count axes cut and its cycles scaled (the record says so). The instance and the
scaling without libtpu; a real compile of the parts through check.compile_exported where the
full-size compile's record says it was too large (needs libtpu, skips with the reason)."""
import importlib.util
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tpu", "worker"))
import jax
import jax.numpy as jnp
from mkworker.tpu_compiler import check, part


def _conv(x, w, b):
    y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return jax.nn.relu(y + b)


SPECS = [jax.ShapeDtypeStruct((8, 64, 64, 32), jnp.float32), jax.ShapeDtypeStruct((3, 3, 32, 32), jnp.float32),
         jax.ShapeDtypeStruct((32,), jnp.float32)]


def test_the_part_cuts_count_axes_only_and_small_programs_get_none():
    assert part.instance(_conv, SPECS, {}) is None  # 4 MiB of inputs profile at full size
    args, kwargs, desc = part.instance(_conv, SPECS, {}, min_bytes=0)
    assert [a.shape for a in args] == [(1, 64, 64, 32), (3, 3, 32, 32), (32,)] and kwargs == {}
    assert desc == "8 -> 1"
    # a matmul's rows are a count axis, but kernels tile them: cutting them is another program
    assert part.instance(lambda x, w: x @ w, [jax.ShapeDtypeStruct((4096, 256), jnp.float32)] * 2, {},
                         min_bytes=0) is None
    # attention's batch and heads are cut, its queries (a tiled axis) are not
    q = jax.ShapeDtypeStruct((2, 4, 256, 64), jnp.float32)
    args, _, _ = part.instance(lambda q, k: jax.nn.softmax(q @ k.swapaxes(-1, -2), axis=-1), [q, q], {},
                               min_bytes=0)
    assert [a.shape for a in args] == [(1, 1, 256, 64)] * 2
    # in (batch, seq, heads, dim) the queries are an outer count axis, as long as the keys: kept
    q = jax.ShapeDtypeStruct((2, 256, 4, 64), jnp.float32)
    args, _, _ = part.instance(lambda q, k: jax.nn.softmax(jnp.einsum("bqhd,bkhd->bhqk", q, k), axis=-1),
                               [q, q], {}, min_bytes=0)
    assert [a.shape for a in args] == [(1, 256, 4, 64)] * 2
    # NCHW with the bias as (1, C, 1, 1): its size-1 batch axis stretched by the add meets
    # nothing, so the images are still cut
    nchw = [jax.ShapeDtypeStruct((8, 32, 64, 64), jnp.float32),
            jax.ShapeDtypeStruct((32, 32, 3, 3), jnp.float32), jax.ShapeDtypeStruct((32,), jnp.float32)]

    def conv_nchw(x, w, b):
        y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"))
        return jnp.tanh(y + b.reshape(1, -1, 1, 1))

    args, _, desc = part.instance(conv_nchw, nchw, {}, min_bytes=0)
    assert [a.shape for a in args] == [(1, 32, 64, 64), (32, 32, 3, 3), (32,)] and desc == "8 -> 1"


def test_with_no_outer_count_axis_a_matmuls_rows_are_cut_to_whole_tiles():
    # A linear layer with a log-softmax (no batch axis): its 8192 rows are cut to 1024, in the
    # input and in the residual that shares them, never below INNER_MIN; rows as long as a
    # feature axis stay whole; 1536 rows (under 2 x INNER_MIN) stay whole.
    def linear_log_softmax(x, w, b, r):
        return jax.nn.log_softmax(x @ w + b, axis=-1) + r

    def specs(rows, d_in=2048):
        return [jax.ShapeDtypeStruct(s, jnp.float32) for s in
                ((rows, d_in), (d_in, 4096), (4096,), (rows, 4096))]

    args, _, desc = part.instance(linear_log_softmax, specs(8192), {}, min_bytes=0)
    assert [a.shape for a in args] == [(1024, 2048), (2048, 4096), (4096,), (1024, 4096)]
    assert desc == "8192 -> 1024" and part.INNER_MIN == 1024
    assert part.instance(linear_log_softmax, specs(8192, d_in=8192), {}, min_bytes=0) is None
    assert part.instance(linear_log_softmax, specs(1536), {}, min_bytes=0) is None
    # 6144 rows halve to 3072 and 1536, then stop: whole tiles of 512
    args, _, desc = part.instance(linear_log_softmax, specs(6144), {}, min_bytes=0)
    assert args[0].shape == (1536, 2048) and desc == "6144 -> 1536"


def test_the_full_record_is_the_parts_scaled_and_says_so():
    small = {"status": "compiled", "cycles": 1000, "predicted_s": 1e-6, "ops": {"k": 1000}}
    full = {"status": "too_large", "reason": "too large to estimate: over the memory limit"}
    r = part.extrapolated(small, 4.0, "8 -> 2", full)
    assert r["cycles"] == 4000 and r["predicted_s"] == pytest.approx(4e-6), r
    assert r["extrapolated"] == {"factor": 4.0, "part_cycles": 1000, "count_axes": "8 -> 2",
                                 "full_status": "too_large", "full_reason": full["reason"]}
    assert "scaled by 4" in r["cycles_note"], r


@pytest.mark.skipif(importlib.util.find_spec("libtpu") is None,
                    reason="declared: libtpu is not installed (pip install -r scripts/requirements.txt)")
def test_a_program_too_large_at_full_size_is_scored_from_its_part():
    from mkworker.tpu_compiler import compiler
    args, kwargs, desc = part.instance(_conv, SPECS, {}, min_bytes=0)
    whole, small = compiler.export_for_tpu(_conv, SPECS), compiler.export_for_tpu(_conv, args, kwargs)
    scale = part.factor(whole, small)
    assert scale == 8.0
    # The full-size compiles' records say "too large"; the parts are real programs.
    too_large = {"generation": "v5e", "status": "too_large", "reason": "over the memory limit"}
    pending = {"generation": "v5e", "candidate": dict(too_large), "reference": dict(too_large),
               "part": {"factor": scale, "count_axes": desc, "candidate": {"blob": 0},
                        "reference": {"blob": 1}}}
    blobs = [small.serialize(), small.serialize()]
    try:
        out = check.compile_exported(pending, blobs, [], "<buffer>", None, {})
    finally:
        compiler.shutdown()
    cand, ref = out["candidate"], out["reference"]
    assert cand["status"] == "compiled" and cand["extrapolated"]["factor"] == 8.0, cand
    assert cand["cycles"] == round(cand["extrapolated"]["part_cycles"] * 8), cand
    assert ref["extrapolated"]["full_status"] == "too_large", ref
    assert out["speedup_vs_xla"] == pytest.approx(1.0), out  # the same program on both sides
    # without a part, a too-large record stays what it is
    bare = check.compile_exported({"generation": "v5e", "candidate": dict(too_large)}, [], [],
                                  "<buffer>", None, {})
    assert bare["candidate"]["status"] == "too_large"
