"""The TPU compiler on a host without a TPU (tpu_compiler.compiler, through the worker's `lower`):
refusals mapped to lines, both programs' static cycles, the time/memory bound, and no network.

Needs libtpu (scripts/requirements.txt pins it); skips with a declared reason where it is absent.
One worker (this module's, with the compiler turned on: tests/conftest.py turns it off for the
other suites) and its one warm compiler child serve the worker tests here."""

import importlib.util
import os
import subprocess
import sys
import textwrap
import time

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


@pytest.mark.parametrize("size", ["4096, 4096, 4096, 16", "2048, 2048, 2048, 64"],
                         ids=["groups-of-256", "groups-of-32"])
def test_a_generated_group_norm_kernel_compiles_with_cycles_under_the_default_bound(
        worker, tmp_path, size):
    # A 4096-cube matmul + GroupNorm kernel that summed its groups by f32 indicator products
    # took libtpu's static profile past 18 GiB (reported too large to estimate): groups of 256
    # are summed on lanes now, with a plan within the VMEM v5e accepts. Groups of 32 use bf16
    # indicator products over 128-lane columns, their parts cut by bit masks (a bf16 round trip
    # made the profile abort: compiled, but no cycles).
    text = read_task("generate_fused", "linear_group_norm.py")
    small = "M, K, C, GROUPS = 64, 256, 512, 8"
    assert small in text
    task = {"form": "infile", "source": text.replace(small, f"M, K, C, GROUPS = {size}"),
            "filename": task_path("generate_fused", "linear_group_norm.py")}
    g = worker.request("generate", task=task, timeout=300)
    assert g["ok"] is True and g["class"] == "matmul_group_norm", g.get("error")
    f = tmp_path / "generated_kernel.py"
    f.write_text(g["source"], encoding="utf-8")
    r = worker.request("lower", task=task, source=g["source"], filename=str(f), kernel=g["entry"],
                       target="tpu", generation="v5e", compile_reference=False, timeout=600)
    assert r["ok"] is True, r.get("error")
    cand = r["tpu_compile"]["candidate"]
    assert cand["status"] == "compiled", cand
    assert cand["cycles"] > 0 and cand["rss_peak_bytes"] < 8 << 30

def test_over_the_limit_is_too_large_to_estimate_and_the_worker_survives(worker):
    _, r = _lower(worker, "scale_add.py", generation="v4", compile_limits={"time_s": 0.001})
    assert r["ok"] is True, r  # lowered; the compile is not an error, only unknown
    cand = r["tpu_compile"]["candidate"]
    assert cand["status"] == "too_large", cand
    assert cand["reason"].startswith("too large to estimate: over the time limit")
    # The bound is the compile's own: libtpu's start (this worker's first v4 child) came before
    # it and is named beside it, so a late "over the time limit" says where the time went. (The
    # start is about a second; with libtpu's pages already cached it took 0.98 s once.)
    assert cand["start_s"] >= 0.2 and cand["wait_s"] < 5, cand
    assert f"{cand['start_s']:.0f} s starting libtpu" in cand["reason"], cand
    assert r["compiled_by"] == "lowering"
    assert any("too_large" in w for w in r["warnings"])
    _, r = _lower(worker, "scale_add.py", generation="v4", compile_limits={"memory_bytes": 1 << 20})
    assert r["tpu_compile"]["candidate"]["status"] == "too_large"
    assert "over the memory limit" in r["tpu_compile"]["candidate"]["reason"]
    # The same worker compiles the next request with a fresh compiler child.
    _, r = _lower(worker, "scale_add.py", generation="v4")
    assert r["tpu_compile"]["candidate"]["status"] == "compiled", r["tpu_compile"]


def test_autotune_ranks_by_the_compilers_cycles_and_checks_the_best_before_it_wins(worker):
    # rows_tunable: 2048 rows compile to no program (scoped VMEM) though the interpreter runs them
    # correctly and fastest; 384 rows compile but cover 1920 of the 2048 rows (wrong), and have the
    # fewest cycles (less work); 256 is the fastest correct one.
    name = "rows_tunable.py"
    src = read_task("infile", name)
    events = []
    rid = worker.send("autotune", task={"form": "infile", "path": task_path("infile", name)}, source=src,
                      filename=task_path("infile", name), space={"BLOCK_ROWS": [8, 64, 256, 384, 2048]},
                      seeds=[4], generation="v5e")
    r = worker.wait_for(rid, timeout=600, events=events)
    assert r["ok"] is True, r
    assert r["ranking"] == {"basis": "tpu_compiler", "label": "predicted (TPU compiler, v5e)",
                            "generation": "v5e"}
    assert r["time_kind"] == "compiled"
    by = {res["config"]["BLOCK_ROWS"]: res for res in r["results"]}
    over = by[2048]
    assert over["status"] == "skipped" and over["stage"] == "compile", over
    assert over["tpu_compile"]["error_kind"] == "vmem"
    assert over["locations"][0]["line"] == marker_line(src, "PALLAS_CALL_LINE")
    assert "run_mode" not in over  # refused without a run
    # Ranked by cycles, never fewer than the kernel's inputs and outputs take at HBM bandwidth;
    # tilings that tie at that floor are ordered by the static profile's own count.
    cycles = {bs: (by[bs]["cycles"], by[bs]["profile_cycles"]) for bs in (8, 64, 256, 384)}
    assert all(c[0] > 0 for c in cycles.values()) and all(by[bs]["time_kind"] == "compiled" for bs in cycles)
    assert cycles[384] < cycles[256] < cycles[64] < cycles[8], cycles
    floored = [bs for bs in cycles if by[bs]["tpu_compile"].get("hbm_floor")]
    assert floored and all(cycles[bs][0] == by[bs]["tpu_compile"]["hbm_floor"]["cycles"] for bs in floored)
    # Checked in the compiler's order until one is correct: 384 first (wrong), then 256.
    checked = [e["config"]["BLOCK_ROWS"] for e in events if e.get("stage") == "checked"]
    assert checked == [384, 256]
    assert by[384]["status"] == "incorrect" and by[384]["run_mode"]["mode"] == "interpret"
    assert r["best"]["config"] == {"BLOCK_ROWS": 256} and r["best"]["correct"] is True
    assert r["best"]["predicted_s"] == pytest.approx(cycles[256][0] / 1.5e9)
    # Ranked below the best: compiled, never run.
    assert by[64]["status"] == by[8]["status"] == "ranked"
    assert "run_mode" not in by[64] and "run_mode" not in by[8]
    assert [res["config"]["BLOCK_ROWS"] for res in r["results"]] == [256, 64, 8, 384, 2048]


def _compiler_children(worker_pid: int) -> list[int]:
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
            with open(f"/proc/{pid}/status") as f:
                ppid = next(int(line.split()[1]) for line in f if line.startswith("PPid:"))
        except (OSError, StopIteration):
            continue
        if b"tpu_compiler/compile_child.py" in cmd and ppid == worker_pid:
            pids.append(int(pid))
    return pids


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            return not any(line.startswith("State:") and "Z" in line.split()[1] for line in f)
    except OSError:
        return False


def test_a_cancelled_lower_kills_its_compile_at_once(worker):
    # slow_compile's kernel takes the compiler minutes (65,536 grid steps).
    name = "slow_compile.py"
    sent = time.time()
    rid = worker.send("lower", source=read_task("infile", name), filename=task_path("infile", name),
                      task={"form": "infile"}, target="tpu", generation="v5e")
    compiling = None
    deadline = time.time() + 240
    while compiling is None and time.time() < deadline:
        for pid in _compiler_children(worker.proc.pid):
            try:  # the module is written to the child's folder just before its compile starts
                if os.stat(f"/proc/{pid}/cwd/module.bin").st_mtime >= sent:
                    compiling = pid
            except OSError:
                pass
        time.sleep(0.1)
    assert compiling is not None, "the compile did not start"
    time.sleep(1.0)
    assert _alive(compiling)
    asked = time.time()
    c = worker.request("cancel", target_id=rid, timeout=30)
    assert c["ok"] is True and c["state"] == "running", c
    r = worker.wait_for(rid, timeout=30)
    assert r["ok"] is False and r["error"]["kind"] == "cancelled", r
    assert time.time() - asked < 10
    assert not _alive(compiling)
    assert worker.request("hello", timeout=60)["ok"] is True


_OFFLINE = textwrap.dedent("""
    import json, os, sys
    sys.path.insert(0, os.path.join(sys.argv[1], "tpu", "worker"))
    import jax, jax.numpy as jnp
    from mkworker.tpu_compiler import compiler as T
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


def test_a_convolution_the_profile_leaves_at_zero_is_counted_at_xlas_own_estimate(worker):
    # libtpu 0.0.42.1's static profile gives this 1x1 convolution's fusion 0 cycles (its DMA
    # model has no "general" DMA); XLA's convolution cost model's estimate stands in, named.
    src = textwrap.dedent("""\
        import jax
        import jax.numpy as jnp

        def reference(x, w):
            y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                             dimension_numbers=("NHWC", "HWIO", "NHWC"))
            return jax.nn.relu(y)

        def make_inputs(key):
            kx, kw = jax.random.split(key)
            return (jax.random.normal(kx, (8, 32, 32, 256), jnp.bfloat16),
                    jax.random.normal(kw, (1, 1, 256, 256), jnp.bfloat16))
        """)
    task = {"form": "infile", "source": src, "filename": task_path("infile", "conv1x1.py")}
    r = worker.request("reference", task=task, generation="v5e", timeout=300)
    assert r["ok"] is True, r
    tc = r["tpu_compile"]
    assert tc["status"] == "compiled" and tc.get("cost_model_ops"), tc
    stood_in = tc["cost_model_ops"]
    assert all(tc["ops"][op] == 0 and c > 0 for op, c in stood_in.items()), tc
    moved = tc.get("moved_bytes_ops") or {}
    assert tc["cycles"] == sum(tc["ops"].values()) + sum(stood_in.values()) + sum(moved.values()), tc
    assert "stands in" in tc["cycles_note"], tc


def _matmul_task(n, epilogue="jnp.tanh"):
    src = textwrap.dedent(f"""\
        import jax
        import jax.numpy as jnp

        def reference(x, w):
            return {epilogue}(x @ w)

        def make_inputs(key):
            kx, kw = jax.random.split(key)
            return (jax.random.normal(kx, ({n}, {n}), jnp.float32),
                    jax.random.normal(kw, ({n}, {n}), jnp.float32))
        """)
    return {"form": "infile", "source": src, "filename": task_path("infile", f"matmul_{n}.py")}


def test_a_compile_that_leaves_the_child_large_retires_it(worker):
    # libtpu and the allocator keep a large compile's pages: a warm child that did a 4096^3
    # matmul holds about 1.9 GiB afterwards. It is retired (the next compile starts libtpu again,
    # so its record has `start_s`), and a child that compiled only small programs stays warm.
    # (Each program is new: the worker caches a reference's compile.)
    records = []
    for n in (256, 4096, 384, 512):
        r = worker.request("reference", task=_matmul_task(n), generation="v5e",
                           compile_limits={"time_s": 300, "memory_bytes": 6 << 30}, timeout=600)
        assert r["ok"] is True and r["tpu_compile"]["status"] == "compiled", r
        records.append(r["tpu_compile"])
    assert records[1]["rss_peak_bytes"] > 1536 << 20, records[1]
    assert "start_s" in records[2], "the large child was kept warm"
    assert "start_s" not in records[3], "a child that compiled a small program was retired"


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


def _compile_folders(tmp):
    return sorted(p for p in os.listdir(tmp) if p.startswith("maxkernel-tpu-compile-"))


def test_libtpus_logs_stay_in_the_childs_folder_and_a_flood_is_stopped(tmp_path):
    # libtpu's default is /tmp/tpu_logs, kept forever: one program made it log 8 GiB in two
    # minutes. The child's logs go in its own folder (TPU_LOG_DIR here is the user's, which the
    # child must not write), a compile is stopped when they pass log_bytes, and the folder goes.
    users_logs = tmp_path / "users_tpu_logs"
    users_logs.mkdir()
    w = WorkerProcess(extra_env={"MAXKERNEL_TPU_COMPILE": "1", "TMPDIR": str(tmp_path),
                                 "TPU_LOG_DIR": str(users_logs), "TPU_MIN_LOG_LEVEL": "0"})
    try:
        r = w.request("reference", task=_matmul_task(128, "jax.nn.relu"), generation="v5e",
                      compile_limits={"log_bytes": 2048}, timeout=300)
        assert r["ok"] is True, r
        tc = r["tpu_compile"]
        assert tc["status"] == "too_large", tc
        assert "of logs (limit 2048 B), stopped before it fills the disk" in tc["reason"], tc
        assert _compile_folders(tmp_path) == [], "the stopped child's folder was left behind"
        # At the default bound the same worker compiles it, with a fresh child.
        r = w.request("reference", task=_matmul_task(256, "jax.nn.relu"), generation="v5e",
                      timeout=300)
        assert r["tpu_compile"]["status"] == "compiled", r["tpu_compile"]
        folders = _compile_folders(tmp_path)
        assert len(folders) == 1, folders
        logs = os.listdir(tmp_path / folders[0] / "tpu_logs")
        assert any(name.startswith("tpu_driver") for name in logs), logs
        assert os.listdir(users_logs) == []
        # A worker killed outright cannot remove its child's folder: the child does, on its way out.
        w.proc.kill()
        deadline = time.monotonic() + 30
        while _compile_folders(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _compile_folders(tmp_path) == []
    finally:
        w.close()
