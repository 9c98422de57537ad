"""Extra shapes in a search (docs/optimize.md "Extra shapes"): every candidate of a run is checked
at the same set of extra input shapes besides the task's own, on real workers, no LLM."""
import json
import os

from optimize_helpers import (
    FIXTURES,
    KERNELS,
    kernel_copy,
    node_rows,
    optimize,
    replay_server,
    sent_text,
)

FLOOR_GRID = (KERNELS / "rows_floor_grid.py").read_text()


def _metrics(store, run_id):
    return {row[0]: (row[2], json.loads(row[5] or "{}")) for row in node_rows(store, run_id)}


def test_a_variant_that_drops_the_remainder_fails_the_ragged_shape_by_name(tmp_path):
    # 128-row blocks with a floor-division grid: right at every multiple of 128 rows (the task's
    # granularity), so the kernel as written passes both rule shapes; its 256-row variant drops
    # the last half block of 384 rows.
    kernel = kernel_copy(tmp_path, "rows_floor_grid.py", FLOOR_GRID)
    store = tmp_path / "store.sqlite"
    proc = optimize(kernel, store, "--mode", "graph", "--search", "beam", "--beam", "1",
                    "--branches", "2", "--budget", "iterations=1")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    shapes = out["extra_shapes"]
    assert [(c["name"], c["sizes"]) for c in shapes["cases"]] == [
        ("ragged", {"512": 384}), ("single_block", {"512": 128})]
    assert shapes["settled"] and shapes["notes"] == []
    nodes = _metrics(store, out["run"])
    root_status, root = nodes[0]
    assert root_status == "correct"
    assert root["extra_shapes"]["required"] is False  # the kernel as written settles the set
    assert [c["status"] for c in root["extra_shapes"]["cases"]] == ["passed", "passed"]
    # The set is kept with the run: a resume reads it back, never derives another.
    assert out["params"]["extra_shapes"]["set"]["cases"] == shapes["cases"]
    wider = [n for n in out["nodes"] if n["description"] == "BLOCK_ROWS 128 -> 256"]
    assert wider and wider[0]["status"] == "incorrect", out["nodes"]
    assert "incorrect: at extra shape `ragged` (inputs (384, 128)): seed " in wider[0]["error"]
    _, child = nodes[wider[0]["id"]]
    assert child["extra_shapes"]["required"] is True
    assert child["extra_shapes"]["cases"][0]["status"] == "failed"


def test_the_run_says_which_shape_the_kernel_as_written_fails(tmp_path):
    # 256-row blocks with a floor-division grid: the kernel as written fails the ragged shape
    # itself. The run says so, and holds its variants only to the single block it passes.
    kernel = kernel_copy(tmp_path, "rows_floor_grid.py",
                         FLOOR_GRID.replace("BLOCK_ROWS = 128", "BLOCK_ROWS = 256"))
    store = tmp_path / "store.sqlite"
    proc = optimize(kernel, store, "--format", "text", "--budget", "evaluations=1")
    assert proc.returncode == 0, proc.stderr
    assert "extra shapes: single_block (512 -> 256)\n" in proc.stdout, proc.stdout
    assert ("  the kernel as written fails extra shape `ragged` (512 -> 384): seed "
            in proc.stdout), proc.stdout
    assert "its variants are not held to it" in proc.stdout


def test_inputs_that_cannot_be_reshaped_leave_the_task_shape_only_and_say_why(tmp_path):
    table = FLOOR_GRID.replace(
        "def make_inputs(key):\n    return (jax.random.normal(key, (ROWS, COLS), jnp.float32),)",
        "TABLE = np.linspace(-1.0, 1.0, ROWS * COLS, dtype=np.float32).reshape(ROWS, COLS)\n\n\n"
        "def make_inputs(key):\n"
        "    return (jnp.asarray(TABLE) + jax.random.normal(key, (ROWS, COLS), jnp.float32),)")
    table = table.replace("import jax.numpy as jnp\n", "import jax.numpy as jnp\nimport numpy as np\n")
    assert "TABLE" in table
    kernel = kernel_copy(tmp_path, "rows_table.py", table)
    store = tmp_path / "store.sqlite"
    proc = optimize(kernel, store, "--budget", "evaluations=1")
    assert proc.returncode == 0, proc.stderr
    shapes = json.loads(proc.stdout)["extra_shapes"]
    assert shapes["cases"] == [] and shapes["settled"]
    assert shapes["notes"][0] == (
        "extra shape `ragged` (512 -> 384) cannot be checked: the inputs function `make_inputs` "
        "cannot run at other sizes: it captures a constant array of shape (512, 128)")


def test_the_testers_fair_shapes_join_the_rules_and_its_unfair_answer_is_asked_again(tmp_path):
    # fixtures/make_tester_chain.py: first 1024 rows (larger than the task's 512), then 256.
    kernel = kernel_copy(tmp_path, "rows_floor_grid.py", FLOOR_GRID)
    store = tmp_path / "store.sqlite"
    env = dict(os.environ, OPENAI_API_KEY="sk-tester-0123456789")
    with replay_server(FIXTURES / "tester_chain_openai.json") as (spec, read_log):
        proc = optimize(kernel, store, "--llm", spec, "--tester-shapes", "2",
                        "--budget", "evaluations=1", env=env)
        log = read_log()
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert [r["purpose"] for r in log] == ["tester", "tester"], log
    first, retry = map(sent_text, log)
    # The Tester sees the task's input shapes and each size's granularity, nothing to write
    # but sizes; the retry quotes why its first answer was refused.
    assert "[512, 128]; sizes: 512 (multiples of 128), 128 (multiples of 128)" in first
    assert "1024" in retry and "larger than the task's" in retry, retry
    shapes = out["extra_shapes"]
    assert [(c["name"], c["sizes"]) for c in shapes["cases"]] == [
        ("ragged", {"512": 384}), ("single_block", {"512": 128}), ("tester_1", {"512": 256})]
    # The root (128-row blocks, sizes read from its input) passes the Tester's shape too.
    _, root = _metrics(store, out["run"])[0]
    assert [c["status"] for c in root["extra_shapes"]["cases"]] == ["passed"] * 3
    # Both answers are paid for (fixture usage: 600 + 650 in, 50 + 55 out).
    assert out["cost"]["tokens_in"] == 1250 and out["cost"]["tokens_out"] == 105, out["cost"]
