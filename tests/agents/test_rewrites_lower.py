"""The rule-based rewrites are real: every variant that mk_rewrite_variants produces for the example
kernels (and a fixture that triggers every rule) still lowers for TPU with the installed JAX
(jax.export with platforms=["tpu"], the path the worker's `lower` op takes on a CPU host), and
every value of the derived search space lowers too."""
import importlib.util
import json
import os
import subprocess
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

ROOT = Path(__file__).resolve().parents[2]


def tool():
    default = Path(os.environ.get("MAXKERNEL_BUILD", ROOT / "build")) / "bin" / "mk_rewrite_variants"
    return os.environ.get("MAXKERNEL_REWRITE_VARIANTS", str(default))


def entry_of(module, name):
    """(function, abstract args) of a kernel file."""
    if name == "matmul_tiled.py":
        return module.workload, jax.eval_shape(module.create_inputs)
    if name == "softmax_rows.py":
        return module.softmax, (jax.ShapeDtypeStruct((module.ROWS, module.COLS), jnp.float32),)
    return module.matmul_bias, module.example_args()


def lower_for_tpu(source, name, tmp_path, tag):
    path = tmp_path / f"{tag}_{name}"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"variant_{tag}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn, args = entry_of(module, name)
    exported = jax.export.export(jax.jit(fn), platforms=["tpu"])(*args)
    text = exported.mlir_module()
    assert "tpu_custom_call" in text  # the pallas_call really became a Mosaic kernel
    return text


def rewrites_of(path):
    if not Path(tool()).exists():
        pytest.skip(f"{tool()} is not built")
    done = subprocess.run([tool(), str(path)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


CASES = [
    (ROOT / "examples" / "matmul_tiled.py", {"block_sizes"}),
    (ROOT / "examples" / "softmax_rows.py", {"block_sizes", "dimension_semantics"}),
    (Path(__file__).parent / "fixtures" / "matmul_bias_bf16_scratch.py",
     {"block_sizes", "dimension_semantics", "buffering", "accumulator_f32"}),
]


@pytest.mark.parametrize("path,strategies", CASES, ids=lambda c: getattr(c, "name", ""))
def test_every_rewrite_lowers_for_tpu(path, strategies, tmp_path):
    original = path.read_text()
    out = rewrites_of(path)
    variants = out["variants"]
    assert {v["strategy"] for v in variants} == strategies
    assert len({v["source"] for v in variants}) == len(variants)
    baseline = lower_for_tpu(original, path.name, tmp_path, "original")
    for i, v in enumerate(variants):
        assert v["source"] != original
        lowered = lower_for_tpu(v["source"], path.name, tmp_path, f"v{i}")
        assert lowered != baseline, v["description"]  # the change reaches the lowered kernel


@pytest.mark.parametrize("path,strategies", CASES, ids=lambda c: getattr(c, "name", ""))
def test_every_search_space_value_lowers(path, strategies, tmp_path):
    out = rewrites_of(path)
    assert out["space"]
    expected = sum(len(values) - 1 for values in out["space"].values())
    assert len(out["configs"]) >= expected  # the space may be capped; configs are not
    for i, c in enumerate(out["configs"]):
        lower_for_tpu(c["source"], path.name, tmp_path, f"config{i}")


def test_buffered_three_does_not_lower_on_this_jax(tmp_path):
    """Why the buffering rule offers pl.Buffered(3) only when RewriteOptions allows it."""
    if tuple(int(p) for p in jax.__version__.split(".")[:2]) != (0, 10):
        pytest.skip("declared: the check is about JAX 0.10")
    path = Path(__file__).parent / "fixtures" / "matmul_bias_bf16_scratch.py"
    source = path.read_text().replace(
        "pl.BlockSpec((BLOCK_M, BLOCK_K), lambda i, k: (i, k))",
        "pl.BlockSpec((BLOCK_M, BLOCK_K), lambda i, k: (i, k), pipeline_mode=pl.Buffered(3))")
    with pytest.raises(Exception, match="double"):
        lower_for_tpu(source, path.name, tmp_path, "buffered3")


GOOD_TPU = sorted(p for p in (ROOT / "tests" / "corpus" / "good").glob("tpu_*.py")
                  if "corpus-requires:" not in p.read_text())


@pytest.fixture
def simulated_v5e(monkeypatch):
    """Some lowerings query the local TPU generation; on a CPU host pretend to be a v5e (as
    tests/corpus/verify_corpus.py does)."""
    from jax._src.pallas.mosaic import tpu_info

    v5e = tpu_info.get_tpu_info_for_chip(tpu_info.ChipVersion.TPU_V5E, 1)
    monkeypatch.setattr(tpu_info, "get_tpu_info", lambda: v5e)


@pytest.mark.parametrize("path", GOOD_TPU, ids=lambda p: p.name)
def test_corpus_rewrites_lower_for_tpu(path, tmp_path, simulated_v5e):
    """Every rewrite and every search-space value of every good TPU corpus kernel lowers."""
    out = rewrites_of(path)
    sources = [v["source"] for v in out["variants"]] + [c["source"] for c in out["configs"]]
    custom_call = None  # whether the original lowers to a Mosaic call (not so with interpret=True)
    for i, source in enumerate([path.read_text(), *sources]):
        variant = tmp_path / f"c{i}_{path.name}"
        variant.write_text(source)
        spec = importlib.util.spec_from_file_location(f"corpus_variant_{path.stem}_{i}", variant)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        fn, args = module.corpus_entry()
        text = jax.export.export(jax.jit(fn), platforms=["tpu"])(*args).mlir_module()
        if custom_call is None:
            custom_call = "tpu_custom_call" in text
        assert ("tpu_custom_call" in text) == custom_call
