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
    assert lim == {"time_s": 30.0, "memory_bytes": float(1 << 30)}
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
