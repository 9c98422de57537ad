"""The TPU compiler on a host without a TPU (mkw_tpu_compiler, through the worker's `lower`):
refusals mapped to lines, both programs' static cycles, the time/memory bound, and no network.

Needs libtpu (scripts/requirements.txt pins it); skips with a declared reason where it is absent.
One worker (this module's, with the compiler turned on: tests/conftest.py turns it off for the
other suites) and its one warm compiler child serve the worker tests here."""

import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest
from worker_harness import ROOT, WorkerProcess, marker_line, read_task, task_path

if importlib.util.find_spec("libtpu") is None:
    pytest.skip("declared: libtpu is not installed (pip install -r scripts/requirements.txt)",
                allow_module_level=True)


@pytest.fixture(scope="module")
def worker():
    w = WorkerProcess(extra_env={"MAXKERNEL_TPU_COMPILE": "1"})
    assert w.request("hello", timeout=120)["ok"]
    yield w
    w.close()


def _lower(worker, name, timeout=300, **kw):
    src = read_task("infile", name)
    return src, worker.request("lower", source=src, filename=task_path("infile", name),
                               task={"form": "infile"}, target="tpu", timeout=timeout, **kw)


def test_vmem_overflow_lowers_but_the_compiler_refuses_it_at_the_line(worker):
    src, lowered = _lower(worker, "vmem_overflow.py")
    assert lowered["ok"] is True, lowered  # jax.export lowering alone accepts it
    assert "tpu_compile" not in lowered
    src, r = _lower(worker, "vmem_overflow.py", generation="v5e")
    assert r["ok"] is False, r
    err = r["error"]
    assert err["kind"] == "compile", err
    assert err["compiled_by"] == "tpu_compiler"
    assert "vmem" in err["message"].lower() and "would exceed memory" in err["message"]
    assert err["tpu_compile"]["candidate"]["error_kind"] == "vmem"
    assert err["locations"][0]["line"] == marker_line(src, "PALLAS_CALL_LINE")
    assert "refused pallas_call _kernel" in err["locations"][0]["message"]


def test_a_kernel_and_its_reference_are_compiled_with_cycles(worker):
    _, r = _lower(worker, "scale_add.py", generation="v5e")
    assert r["ok"] is True, r
    assert r["compiled_by"] == "tpu_compiler"
    tc = r["tpu_compile"]
    assert tc["label"] == "predicted (TPU compiler, v5e)"
    cand, ref = tc["candidate"], tc["reference"]
    assert cand["status"] == "compiled" and cand["device_kind"] == "TPU v5 lite"
    assert cand["cycles"] > 0 and ref["cycles"] > 0
    assert cand["predicted_s"] == pytest.approx(cand["cycles"] / 1.5e9)
    assert tc["speedup_vs_xla"] == pytest.approx(ref["cycles"] / cand["cycles"])
    assert ref["cost_analysis"]["bytes accessed"] > 0


def test_over_the_limit_is_too_large_to_estimate_and_the_worker_survives(worker):
    _, r = _lower(worker, "scale_add.py", generation="v4", compile_limits={"time_s": 0.001})
    assert r["ok"] is True, r  # lowered; the compile is not an error, only unknown
    cand = r["tpu_compile"]["candidate"]
    assert cand["status"] == "too_large", cand
    assert cand["reason"].startswith("too large to estimate: over the time limit")
    assert r["compiled_by"] == "lowering"
    assert any("too_large" in w for w in r["warnings"])
    _, r = _lower(worker, "scale_add.py", generation="v4", compile_limits={"memory_bytes": 1 << 20})
    assert r["tpu_compile"]["candidate"]["status"] == "too_large"
    assert "over the memory limit" in r["tpu_compile"]["candidate"]["reason"]
    # The same worker compiles the next request with a fresh compiler child.
    _, r = _lower(worker, "scale_add.py", generation="v4")
    assert r["tpu_compile"]["candidate"]["status"] == "compiled", r["tpu_compile"]


_OFFLINE = textwrap.dedent("""
    import json, os, sys
    sys.path.insert(0, os.path.join(sys.argv[1], "tpu", "worker"))
    import jax, jax.numpy as jnp
    import mkw_tpu_compiler as T
    r = T.estimate(lambda a, b: a @ b, [jax.ShapeDtypeStruct((256, 256), jnp.bfloat16)] * 2, "v5e")
    T.shutdown()
    print(json.dumps({"status": r["status"], "cycles": r.get("cycles")}))
""")


def test_compiles_with_only_loopback():
    as_root = [] if os.getuid() == 0 else ["--map-root-user"]
    probe = subprocess.run(["unshare", "--net", *as_root, "--", "true"], check=False,
                           capture_output=True)
    if probe.returncode != 0:
        pytest.skip("declared: this machine does not allow a network namespace (unshare --net)")
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    out = subprocess.run(
        ["unshare", "--net", *as_root, "--", "sh", "-c", 'ip link set lo up && exec "$@"', "sh",
         sys.executable, "-c", _OFFLINE, ROOT],
        check=False, capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    last = out.stdout.strip().splitlines()[-1]
    assert '"status": "compiled"' in last and '"cycles": null' not in last, out.stdout


def test_the_reference_op_answers_xlas_compiled_program(worker):
    r = worker.request("reference", task={"form": "infile", "path": task_path("infile", "scale_add.py")},
                       generation="v5e", timeout=300)
    assert r["ok"] is True, r
    tc = r["tpu_compile"]
    assert tc["status"] == "compiled" and tc["cycles"] > 0, tc
    assert tc["label"] == "predicted (TPU compiler, v5e)"
    assert tc["predicted_s"] == pytest.approx(tc["cycles"] / 1.5e9)


def test_with_libtpu_installed_the_worker_itself_stays_on_the_cpu():
    # No JAX_PLATFORMS: JAX would load libtpu in the worker (its warnings about TPU hosts, its
    # machine-wide lock); the worker keeps it for the compiler's child only.
    w = WorkerProcess(extra_env={"JAX_PLATFORMS": ""})
    try:
        hello = w.request("hello", timeout=120)
        assert hello["ok"] and hello["platform"] == "cpu", hello
        log = w.stderr_text()
    finally:
        w.close()
    assert "libtpu is installed but no TPU is attached" in log
    assert "TPU_WORKER_HOSTNAMES" not in log and "libtpu_init_utils" not in log, log[-2000:]
