"""The autotune phase (docs/optimize.md "Autotune phase"): the best kernel's block sizes tried in
one worker call, each configuration cached per kernel, shapes and device in the store, so a second
run on the same kernel tunes nothing again. Real workers, no LLM."""
import json

from optimize_helpers import kernel_copy, node_rows, optimize

ARGS = ("--mode", "graph", "--search", "beam", "--beam", "1", "--branches", "1",
        "--budget", "iterations=1", "--autotune-configs", "4", "--extra-shapes", "none")


def _tuned_child(out):
    tuned = [n for n in out["nodes"] if n["strategy"] == "autotune_phase"]
    assert len(tuned) == 1, out["nodes"]
    return tuned[0]


def test_a_second_run_on_the_same_kernel_tunes_no_configuration_twice(tmp_path):
    # scale_rows: 8-row blocks over 256 rows; the derived space is BLOCK_ROWS 8, 16, 32 (4 is
    # not a multiple of 8), and the model prefers the fewest grid steps.
    kernel = kernel_copy(tmp_path)
    store = tmp_path / "store.sqlite"
    first = optimize(kernel, store, *ARGS)
    assert first.returncode == 0, first.stderr
    out = json.loads(first.stdout)
    assert out["cost"]["tuning_evaluations"] == 3 and out["cost"]["tuning_cache_hits"] == 0
    root = out["nodes"][0]
    assert root["tuning"]["space"] == {"BLOCK_ROWS": [8, 16, 32]}
    assert root["tuning"]["correct"] == 3 and root["tuning"]["time_kind"] == "predicted"
    assert root["tuning"]["best_config"] == {"BLOCK_ROWS": 32}
    # The tests run without the TPU compiler (tests/conftest.py): checked, then ranked by the model.
    assert root["tuning"]["ranking"]["basis"] == "run"
    assert root["tuning"]["ranking"]["compiler"] == "turned off (MAXKERNEL_TPU_COMPILE=0)"
    child = _tuned_child(out)
    assert child["parent"] == 0 and child["status"] == "correct"
    assert child["description"].startswith("autotune phase: BLOCK_ROWS=32 (best of 3 configurations")
    assert child["speedup"] > 1
    # The round's rewrites start from the tuned kernel (the best when they are proposed).
    rewrites = [n for n in out["nodes"] if n["id"] not in (0, child["id"])]
    assert rewrites and all(n["parent"] == child["id"] for n in rewrites), out["nodes"]

    second = optimize(kernel, store, *ARGS)
    assert second.returncode == 0, second.stderr
    again = json.loads(second.stdout)
    assert again["run"] != out["run"]
    assert again["cost"]["tuning_evaluations"] == 0
    assert again["cost"]["tuning_cache_hits"] == 3
    assert again["nodes"][0]["tuning"]["evaluated"] == 0
    assert again["nodes"][0]["tuning"]["best_config"] == {"BLOCK_ROWS": 32}
    assert "ranking" not in again["nodes"][0]["tuning"]  # every configuration from the cache
    child_again = _tuned_child(again)
    assert child_again["code_hash"] == child["code_hash"]
    assert child_again["description"].endswith("3 from the tuning cache)")


def test_a_changed_kernel_is_tuned_afresh_and_text_output_counts_the_phase(tmp_path):
    # The cache key holds the kernel's text: the same kernel with 16-row blocks is another kernel.
    store = tmp_path / "store.sqlite"
    kernel = kernel_copy(tmp_path)
    first = optimize(kernel, store, *ARGS)
    assert first.returncode == 0, first.stderr
    sixteen = kernel_copy(tmp_path, "scale_rows_16.py",
                          kernel.read_text().replace("BLOCK_ROWS = 8", "BLOCK_ROWS = 16"))
    proc = optimize(sixteen, store, *ARGS, "--format", "text")
    assert proc.returncode == 0, proc.stderr
    # BLOCK_ROWS 16, 8, 32, 64: three of them have the values the first run tuned, yet none is
    # reused, since each configuration is of another kernel text.
    assert "tuning: 4 configurations run, 0 from the tuning cache" in proc.stdout, proc.stdout
