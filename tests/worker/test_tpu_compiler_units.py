"""tpu_compiler.compiler without starting libtpu: the clocks it reads, how it names a refusal, the
limits it applies, and what it answers where libtpu is missing (the lowering-only fallback)."""
import importlib.util
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tpu", "worker"))
from mkworker.tpu_compiler import compiler as T


def test_clocks_come_from_the_generations_table_with_a_source():
    v5e = T.clock("v5e")
    assert v5e["hz"] == 1.5e9 and v5e["source"].startswith("https://")
    assert T.clock("v4")["hz"] == 1.05e9
    assert T.clock("v6e") is None  # not published: cycles and ratios only


def test_refusals_are_named_by_what_ran_out():
    vmem = ("RESOURCE_EXHAUSTED: Allocation (size=268435456) would exceed memory (size=134217728) :: "
            "#allocation2 [shape = 'u8[268435456]{0}', space=vmem, size = 0x10000000, scoped]")
    assert T.error_kind(vmem) == "vmem"
    assert T.error_kind("RESOURCE_EXHAUSTED: Ran out of memory in memory space hbm") == "hbm"
    assert T.error_kind("Mosaic failed: unsupported layout for vector.shape_cast") == "layout"


def test_limits_from_request_over_environment_over_defaults(monkeypatch):
    monkeypatch.setenv("MAXKERNEL_TPU_COMPILE_LIMITS", '{"time_s": 30}')
    lim = T.limits_from({"memory_bytes": 1 << 30})
    assert lim == {**T.DEFAULT_LIMITS, "time_s": 30.0, "memory_bytes": float(1 << 30)}
    monkeypatch.delenv("MAXKERNEL_TPU_COMPILE_LIMITS")
    assert T.limits_from(None) == T.DEFAULT_LIMITS


def test_without_libtpu_it_says_so_and_compiles_nothing(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "libtpu" else real(name, *a))
    import jax
    import jax.numpy as jnp
    r = T.estimate(lambda x: x * 2, [jax.ShapeDtypeStruct((8, 128), jnp.float32)], "v5e")
    assert r["status"] == "unavailable" and "libtpu is not installed" in r["reason"], r
    assert not T._children


def test_an_unknown_generation_is_unavailable_not_an_error():
    if importlib.util.find_spec("libtpu") is None:
        pytest.skip("declared: libtpu is not installed (the generation is checked after it)")
    import jax
    import jax.numpy as jnp
    r = T.estimate(lambda x: x * 2, [jax.ShapeDtypeStruct((8, 128), jnp.float32)], "v7x")
    assert r["status"] == "unavailable" and "no TPU topology" in r["reason"], r


def test_a_program_the_static_profile_gives_no_cycles_has_no_estimate():
    # libtpu gave XLA's 1x1-convolution fusion 0 cycles at full size: a sum of zeros is no
    # estimate (a speedup against it would be infinite), and the zero ops are named.
    reply = {"ok": True, "cycles": {"copy.2": 0, "fusion.6": 0}, "compile_s": 8.1}
    r = T.result_of(reply, "v5e", True, {})
    assert r["status"] == "compiled" and "cycles" not in r and "predicted_s" not in r, r
    assert "0 cycles" in r["cycles_note"] and r["zero_cycle_ops"] == ["copy.2", "fusion.6"], r
    part = T.result_of({"ok": True, "cycles": {"copy.2": 0, "fusion.1": 1500}}, "v5e", True, {})
    assert part["cycles"] == 1500 and part["predicted_s"] > 0 and part["zero_cycle_ops"] == ["copy.2"]


# The shape of libtpu's compiled HLO text (from a real v5e compile of a 1-D convolution whose
# output is summed and multiplied by a matrix), cut to the lines that matter.
_HLO = """HloModule jit_f, is_scheduled=true, entry_computation_layout={(f32[2,256,128])->f32[2,64]}

%fused_computation.2 (param_0.44: bf16[2,7,4,128], param_1.55: bf16[2,8,33,128]) -> bf16[2,8,37,128] {
  ROOT %concatenate.1 = bf16[2,8,37,128]{3,0,2,1} concatenate(%param_0.44, %param_1.55), dimensions={2}
}

%fused_computation.4.clone (param_0.42: bf16[2,8,37,128]) -> bf16[16,37,128] {
  ROOT %bitcast.3 = bf16[16,37,128]{2,0,1} bitcast(%param_0.42)
}

%fused_computation.14 (param_0.48: f32[5,128,128], param_1.56: bf16[2,8,37,128]) -> bf16[16,33] {
  %fusion.16 = bf16[16,37,128]{2,0,1} fusion(%param_1.56), kind=kLoop, calls=%fused_computation.4.clone
  ROOT %convolution.6 = f32[16,33,128]{2,0,1} convolution(%fusion.16, %param_0.48), window={size=5}
}

%wrapped (param_0.47: bf16[2,64], param_1.54: f32[64,64]) -> f32[2,64] {
  ROOT %convolution.7 = f32[2,64]{1,0} convolution(%param_0.47, %param_1.54), dim_labels=bf_io->bf
}

%calls_wrapped (param_0.9: bf16[2,64], param_1.9: f32[64,64]) -> f32[2,64] {
  ROOT %fusion.30 = f32[2,64]{1,0} fusion(%param_0.9, %param_1.9), kind=kOutput, calls=%wrapped
}

ENTRY %main.2 (x.1: f32[2,256,128], w.1: f32[5,128,128], v.1: f32[64,64]) -> f32[2,64] {
  %x.1 = f32[2,256,128]{2,1,0} parameter(0), sharding={replicated}
  %copy.9 = bf16[2,256,128]{2,0,1} copy(%x.1), backend_config={"flag_configs":[]}
  %fusion = bf16[2,8,37,128]{3,0,2,1} fusion(%slice.2, %bitcast.11), kind=kLoop, calls=%fused_computation.2
  %fusion.14 = bf16[16,33]{0,1} fusion(%copy-done, %fusion), kind=kOutput, calls=%fused_computation.14, metadata={op_name="jit(f)/conv_general_dilated"}
  %dot.3 = f32[2,64]{1,0} dot(%reshape.6, %v.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %fusion.17 = f32[2,64]{1,0} fusion(%reshape.6, %v.1), kind=kOutput, calls=%calls_wrapped
}
"""


def test_the_ops_that_compute_a_convolution_or_matmul_are_found_in_the_compiled_hlo():
    from mkworker.tpu_compiler import compile_child
    # directly, in the fusion's computation, and two calls down; copies and loop fusions are not
    assert compile_child._compute_ops(_HLO) == ["fusion.14", "dot.3", "fusion.17"]


def test_a_convolution_the_static_profile_left_out_means_no_estimate():
    # libtpu gave XLA's 1-D convolution fusion 0 cycles at full size while it counted the copy:
    # the sum (the copy alone) would make XLA look 3x faster than its own roofline allows.
    reply = {"ok": True, "cycles": {"copy.1": 86375, "fusion.6": 0}, "compute_ops": ["fusion.6"]}
    r = T.result_of(reply, "v5e", True, {})
    assert r["status"] == "compiled" and "cycles" not in r and "predicted_s" not in r, r
    assert r["uncounted_compute_ops"] == ["fusion.6"] and "fusion.6" in r["cycles_note"], r
    # a zero-cycle op that computes no convolution or matmul (a copy) leaves the sum standing
    ok = T.result_of({"ok": True, "cycles": {"copy.2": 0, "fusion.6": 900}, "compute_ops": ["fusion.6"]},
                     "v5e", True, {})
    assert ok["cycles"] == 900 and "uncounted_compute_ops" not in ok and ok["zero_cycle_ops"] == ["copy.2"]


def test_xlas_own_estimate_stands_in_for_a_matmul_the_profile_left_at_zero():
    # The compiled HLO carries XLA's per-op estimate; its convolution model's (CLASSIC) stands in
    # for a compute op at 0 cycles and is named; another model's never does (it is 3-17x off).
    reply = {"ok": True, "cycles": {"copy.1": 8982, "fusion.2": 0, "copy.3": 0},
             "compute_ops": ["fusion.2"],
             "cost_model": {"copy.1": [30242, "INVALID"], "fusion.2": [40254, "CLASSIC"],
                            "copy.3": [500, "INVALID"]}}
    r = T.result_of(reply, "v5e", True, {})
    assert r["cycles"] == 8982 + 40254 and r["cost_model_ops"] == {"fusion.2": 40254}, r
    assert r["ops"]["fusion.2"] == 0 and "stands in" in r["cycles_note"], r
    assert r["predicted_s"] == pytest.approx((8982 + 40254) / 1.5e9)
    assert "uncounted_compute_ops" not in r and r["zero_cycle_ops"] == ["copy.3", "fusion.2"]
    other = dict(reply, cost_model={"fusion.2": [40254, "INVALID"]})
    r = T.result_of(other, "v5e", True, {})
    assert "cycles" not in r and r["uncounted_compute_ops"] == ["fusion.2"], r
    # every op at 0: the stand-ins make the sum when every compute op has one
    alone = T.result_of({"ok": True, "cycles": {"fusion": 0}, "compute_ops": ["fusion"],
                         "cost_model": {"fusion": [94176, "CLASSIC"]}}, "v5e", True, {})
    assert alone["cycles"] == 94176 and alone["cost_model_ops"] == {"fusion": 94176}, alone


def test_xlas_per_op_estimates_are_read_from_the_entry_of_the_compiled_hlo():
    from mkworker.tpu_compiler import compile_child
    hlo = _HLO.replace(
        "calls=%fused_computation.14, metadata",
        'calls=%fused_computation.14, backend_config={"window_config":{"estimated_cycles":"68768",'
        '"iteration_bounds":["1"],"cost_model_type":"COST_MODEL_TYPE_CLASSIC"}}, metadata').replace(
        'copy(%x.1), backend_config={"flag_configs":[]}',
        'copy(%x.1), backend_config={"window_config":{"estimated_cycles":"42144",'
        '"cost_model_type":"COST_MODEL_TYPE_INVALID"}}')
    assert compile_child._cost_model(hlo) == {"fusion.14": [68768, "CLASSIC"], "copy.9": [42144, "INVALID"]}
    assert compile_child._cost_model("HloModule m") == {}


def test_a_copy_the_profile_left_at_zero_counts_the_bytes_it_moves():
    # libtpu gave a 256 MiB copy 0 cycles: a program could hide a pass over its data in it.
    # It is counted at the bytes it moves at v5e's HBM bandwidth (819 GB/s, 1.5 GHz).
    reply = {"ok": True, "cycles": {"kernel.1": 1000, "copy.3": 0}, "compute_ops": [],
             "op_bytes": {"kernel.1": 1 << 20, "copy.3": 256 << 20}}
    r = T.result_of(reply, "v5e", True, {})
    want = round((256 << 20) / 819e9 * 1.5e9)
    assert r["moved_bytes_ops"] == {"copy.3": want} and r["cycles"] == 1000 + want, r
    assert "HBM bandwidth" in r["cycles_note"] and r["ops"]["copy.3"] == 0, r
    # no clock for the generation (v6e): no way to turn bytes into cycles, so nothing stands in
    assert "moved_bytes_ops" not in T.result_of(reply, "v6e", True, {})


def test_a_program_is_never_faster_than_moving_its_inputs_and_outputs_once():
    # libtpu's static profile gave a memory-bound kernel fewer cycles than its 640 MiB of inputs
    # and outputs take at v5e's HBM bandwidth: it counts at that floor, the profile's kept.
    io = 640 << 20
    floor = round(io / 819e9 * 1.5e9)
    reply = {"ok": True, "cycles": {"pool.1": floor // 2}, "compute_ops": [], "io_bytes": io}
    r = T.result_of(reply, "v5e", True, {})
    assert r["cycles"] == floor and r["predicted_s"] == floor / 1.5e9, r
    assert r["hbm_floor"] == {"cycles": floor, "profile_cycles": floor // 2, "io_bytes": io}
    assert "HBM bandwidth" in r["cycles_note"] and r["ops"]["pool.1"] == floor // 2, r
    # above the floor the profile's cycles stand as they are
    reply["cycles"] = {"pool.1": floor + 5}
    r = T.result_of(reply, "v5e", True, {})
    assert r["cycles"] == floor + 5 and "hbm_floor" not in r and "cycles_note" not in r, r


def test_xlas_program_compiled_without_the_profile_is_estimated_from_xlas_models():
    # The static profile aborted and the retry has no cycles: XLA's convolution model stands in
    # for its matmul, the bytes at HBM bandwidth for its other estimated ops.
    copy_cycles = round((256 << 20) / 819e9 * 1.5e9)
    reply = {"ok": True, "cycles": {}, "compute_ops": ["fusion.1"], "custom_calls": [],
             "cost_model": {"fusion.1": [900000, "CLASSIC"], "copy.2": [5, "INVALID"]},
             "op_bytes": {"fusion.1": 1 << 20, "copy.2": 256 << 20, "p0": 1 << 20}}
    r = T.result_of(reply, "v5e", False, {})
    assert r["cycles"] == 900000 + copy_cycles, r
    assert r["cost_model_ops"] == {"fusion.1": 900000} and r["moved_bytes_ops"] == {"copy.2": copy_cycles}
    assert "XLA's own cost-model estimate for fusion.1" in r["cycles_note"], r
    # a matmul XLA's convolution model did not estimate: no estimate at all
    reply["cost_model"]["fusion.1"] = [900000, "INVALID"]
    r = T.result_of(reply, "v5e", False, {})
    assert "cycles" not in r and "no estimate" in r["cycles_note"], r
    # a Pallas kernel (a custom call) is never estimated this way: its work is not in XLA's models
    reply["cost_model"]["fusion.1"] = [900000, "CLASSIC"]
    reply["custom_calls"] = ["kernel.3"]
    assert "cycles" not in T.result_of(reply, "v5e", False, {})
    # the profiled compile of the same program is scored from the profile only
    reply["custom_calls"] = []
    assert "cycles" not in T.result_of(reply, "v5e", True, {})


def test_the_custom_calls_of_a_compiled_program_are_found():
    from mkworker.tpu_compiler import compile_child
    hlo = """HloModule m

ENTRY %main (p0: f32[8,128]) -> f32[8,128] {
  %p0 = f32[8,128]{1,0} parameter(0)
  %kernel.3 = f32[8,128]{1,0} custom-call(%p0), custom_call_target="tpu_custom_call"
  %gmm.1 = bf16[512,512]{1,0} custom-call(s32[4]{0} %p0, bf16[512,256]{1,0} %kernel.3), custom_call_target="tpu_custom_call"
  ROOT %copy.1 = f32[8,128]{1,0} copy(%kernel.3)
}
"""
    assert compile_child._custom_calls(hlo) == ["kernel.3", "gmm.1"]


def test_the_bytes_a_program_reads_and_writes_are_its_inputs_and_outputs():
    import jax
    import jax.numpy as jnp
    from mkworker.tpu_compiler import compile_child
    exported = jax.export.export(jax.jit(lambda x, y: (x + y).astype(jnp.bfloat16)))(
        jax.ShapeDtypeStruct((64, 128), jnp.float32), jax.ShapeDtypeStruct((128,), jnp.float32))
    assert compile_child._io_bytes(exported) == 64 * 128 * 4 + 128 * 4 + 64 * 128 * 2


def test_the_bytes_each_top_level_op_moves_are_read_from_the_compiled_hlo():
    from mkworker.tpu_compiler import compile_child
    hlo = """HloModule m

ENTRY %main.2 (x.1: f32[8,64,64,64]) -> f32[8,64,64,128] {
  %x.1 = f32[8,64,64,64]{3,2,1,0:T(8,128)} parameter(0), metadata={op_name="x"}
  %fusion.2 = f32[8,64,64,128]{3,0,2,1:T(8,128)S(1)} fusion(%x.1), kind=kOutput, calls=%f
  ROOT %copy.1 = bf16[8,64,64,128]{3,2,1,0:T(8,128)(2,1)} copy(%fusion.2), metadata={op_name="y"}
}
"""
    got = compile_child._op_bytes(hlo)
    x, y = 8 * 64 * 64 * 64 * 4, 8 * 64 * 64 * 128 * 4
    assert got["fusion.2"] == x + y and got["copy.1"] == y + y // 2, got
