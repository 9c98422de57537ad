"""`maxkernel optimize TASK` on references with no kernel: the root is XLA, the first kernel comes
from the generator's templates (no LLM), the best kernel is written beside the task without
touching existing files, and a reference no template covers is refused with the reason. Real
worker processes, a fresh store per test."""
import json
import os
import sqlite3
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def maxkernel():
    return os.environ.get("MAXKERNEL_CLI", str(ROOT / "build" / "bin" / "maxkernel"))


def python():
    return os.environ.get("MAXKERNEL_PYTHON", str(ROOT / ".venv" / "bin" / "python"))


def optimize(target, store, *extra, timeout=600):
    args = [maxkernel(), "optimize", str(target), "--python", python(), "--store", str(store),
            "--format", "json", "--no-report", *map(str, extra)]
    return subprocess.run(args, check=False, capture_output=True, text=True, timeout=timeout)


ROWWISE = '''import jax
import jax.numpy as jnp


def reference(x, w):
    ms = jnp.mean(x * x, axis=-1, keepdims=True)
    return x * jax.lax.rsqrt(ms + 1e-6) * w


def make_inputs(key):
    kx, kw = jax.random.split(key)
    return (jax.random.normal(kx, (64, 256), jnp.float32),
            jax.random.uniform(kw, (1, 256), jnp.float32, minval=0.5, maxval=1.5))
'''

SORT = '''import jax
import jax.numpy as jnp


def reference(x):
    return jnp.sort(x, axis=-1)


def make_inputs(key):
    return (jax.random.normal(key, (8, 128), jnp.float32),)
'''

YAML = '''name: bias_relu
input_gen_code: |-
  def get_inputs():
      x = jax.random.normal(jax.random.key(1), (128, 256), jnp.float32)
      return (x,), ()
rtol: 0.01
atol: 0.01
'''

MAXKERNEL_REFERENCE = '''import jax
import jax.numpy as jnp


def get_inputs():
    x = jax.random.normal(jax.random.key(1), (128, 256), jnp.float32)
    return (x,), ()


def computation(x):
    return jnp.maximum(x * 0.5 + 1.0, 0.0)
'''


def test_an_in_file_reference_starts_from_xla_and_gets_a_correct_generated_kernel(tmp_path):
    task = tmp_path / "rmsnorm.py"
    task.write_text(ROWWISE)
    taken = tmp_path / "rmsnorm_pallas.py"
    taken.write_text("# the user's own file: never overwritten\n")
    r = optimize(task, tmp_path / "store.sqlite", "--budget", "iterations=1")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    root, generated = out["nodes"][0], out["nodes"][1]
    assert root["strategy"] == "xla_reference" and root["speedup"] == 1.0
    assert generated["parent"] == 0 and generated["strategy"] == "generated:rowwise"
    assert generated["status"] == "correct", generated
    assert out["score_kind"] == "predicted (model, v5e)"
    # The reference file is untouched, the existing neighbour too; the kernel went beside them.
    assert task.read_text() == ROWWISE
    assert taken.read_text() == "# the user's own file: never overwritten\n"
    written = Path(out["kernel_file"])
    assert written == tmp_path / "rmsnorm_pallas_2.py"
    assert "pallas_call(" in written.read_text()
    with sqlite3.connect(tmp_path / "store.sqlite") as db:
        code = db.execute("SELECT code FROM nodes WHERE run_id = ? AND id = ?",
                          (out["run"], out["kernel_node"])).fetchone()[0]
    assert written.read_text() == code
    assert "from its reference" in r.stderr and "no LLM" in r.stderr
    # The run records the file it wrote: its report, made later from the store, names it.
    page = tmp_path / "report.html"
    report = subprocess.run([maxkernel(), "report", out["run"], "-o", str(page), "--store",
                             str(tmp_path / "store.sqlite")], check=False, capture_output=True, text=True)
    assert report.returncode == 0, report.stderr
    assert f"<tr><th>kernel written</th><td><code>{written}</code>" in page.read_text()


def test_a_published_maxkernel_folder_with_static_args_runs_from_its_reference(tmp_path):
    folder = tmp_path / "bias_relu"
    folder.mkdir()
    (folder / "kernel_task.yaml").write_text(YAML)
    (folder / "reference.py").write_text(MAXKERNEL_REFERENCE)
    r = optimize(folder, tmp_path / "store.sqlite", "--budget", "iterations=1")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    generated = out["nodes"][1]
    assert generated["strategy"] == "generated:elementwise" and generated["status"] == "correct"
    assert Path(out["kernel_file"]).parent == folder


def test_a_reference_no_template_covers_is_refused_with_its_primitive(tmp_path):
    task = tmp_path / "sort_rows.py"
    task.write_text(SORT)
    r = optimize(task, tmp_path / "store.sqlite", "--budget", "iterations=1")
    assert r.returncode == 1
    assert "sort" in r.stderr and "LLM" in r.stderr, r.stderr
    assert not list(tmp_path.glob("*_pallas*.py"))


def test_a_file_with_neither_kernel_nor_task_gets_a_clear_error(tmp_path):
    plain = tmp_path / "plain.py"
    plain.write_text("import jax.numpy as jnp\n\n\ndef f(x):\n    return jnp.sin(x)\n")
    r = optimize(plain, tmp_path / "store.sqlite")
    assert r.returncode == 2
    assert "no pallas_call in plain.py and no task to write one from" in r.stderr


LARGE_MATMUL = '''import jax
import jax.numpy as jnp


def reference(x, w, b):
    return jnp.maximum(x @ w + b, 0.0)


def make_inputs(key):
    kx, kw, kb = jax.random.split(key, 3)
    return (jax.random.normal(kx, (2048, 2048), jnp.float32),
            jax.random.normal(kw, (2048, 1024), jnp.float32) / 45.0,
            jax.random.normal(kb, (1, 1024), jnp.float32))
'''


def test_shrink_checks_correctness_on_a_smaller_instance_and_lowers_at_full_size(tmp_path):
    task = tmp_path / "linear_relu.py"
    task.write_text(LARGE_MATMUL)
    store = tmp_path / "store.sqlite"
    r = optimize(task, store, "--budget", "iterations=1,evaluations=2", "--shrink", "8")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    generated = out["nodes"][1]
    assert generated["strategy"] == "generated:matmul_epilogue"
    assert generated["status"] == "correct", generated
    assert out["params"]["evaluate"] == {"shrink": 8}
    with sqlite3.connect(store) as db:
        metrics = json.loads(db.execute("SELECT metrics_json FROM nodes WHERE run_id = ? AND id = 1",
                                        (out["run"],)).fetchone()[0])
    instance = metrics["instance"]
    assert instance["kind"] == "shrunk" and instance["factor"] == 8
    assert [list(s) for s in instance["input_shapes"]][:2] == [[256, 256], [256, 128]]
    # The prediction is for the full-size kernel: its lowering facts are at 2048 x 2048.
    grid = metrics["pallas_calls"][0]["grid"]
    assert grid and max(grid) > 1, metrics["pallas_calls"][0]
