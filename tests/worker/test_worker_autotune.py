"""autotune: several block sizes, one that fails to lower, the best chosen."""

from worker_harness import read_task, task_path


def test_autotune_block_sizes(worker):
    events = []
    rid = worker.send("autotune",
                      task={"form": "jaxbench", "baseline": task_path("jaxbench", "baseline.py")},
                      source=read_task("jaxbench", "candidate.py"),
                      filename=task_path("jaxbench", "candidate.py"),
                      space={"block_rows": [8, 12, 16, 32]}, seeds=[1, 2],
                      timing={"min_runs": 3, "min_seconds": 0.0, "max_seconds": 1.0})
    r = worker.wait_for(rid, timeout=180, events=events)
    assert r["ok"] is True, r
    assert r["total"] == 4 and len(r["results"]) == 4
    by_bs = {res["config"]["block_rows"]: res for res in r["results"]}
    bad = by_bs[12]
    assert bad["status"] == "skipped"
    assert bad["stage"] == "lowering"
    assert "divisible by 8" in bad["reason"]
    ok = [res for res in r["results"] if res["status"] == "ok"]
    assert {res["config"]["block_rows"] for res in ok} == {8, 16, 32}
    assert all(res["correct"] and res["timing"]["median_s"] > 0 for res in ok)
    # Sorted: correct ones by median time first, the skipped one last.
    medians = [res["timing"]["median_s"] for res in r["results"][:3]]
    assert medians == sorted(medians)
    assert r["results"][-1]["config"]["block_rows"] == 12
    assert r["best"]["config"] == r["results"][0]["config"]
    assert r["best"]["correct"] is True
    assert r["time_kind"] == "interpret" and r["speedup"] is None
    # Without the TPU compiler (no generation asked for), today's ranking, labelled as such.
    assert r["ranking"]["basis"] == "run" and "interpret" in r["ranking"]["label"]
    assert r["ranking"]["compiler"] == "the request names no TPU generation"
    assert by_bs[8]["grid"] == [[8]] and by_bs[32]["grid"] == [[2]]
    done = [e["done"] for e in events if "done" in e]
    assert done == [1, 2, 3, 4]


def test_autotune_module_constant_and_incorrect_config(worker):
    # BLOCK_ROWS is a module-level constant in the infile task; 48 lowers
    # for TPU but covers only 48 of 64 rows, so it must be rejected.
    r = worker.request("autotune", task={"form": "infile", "path": task_path("infile", "scale_add.py")},
                       source=read_task("infile", "scale_add.py"),
                       filename=task_path("infile", "scale_add.py"),
                       space={"BLOCK_ROWS": [32, 48]}, seeds=[4], timing={"min_runs": 2, "min_seconds": 0.0},
                       timeout=180)
    assert r["ok"] is True, r
    by_bs = {res["config"]["BLOCK_ROWS"]: res for res in r["results"]}
    assert by_bs[32]["status"] == "ok"
    assert by_bs[48]["status"] == "incorrect"
    assert r["best"]["config"] == {"BLOCK_ROWS": 32}


def test_autotune_unknown_parameter_is_reported(worker):
    r = worker.request("autotune", task={"form": "infile", "path": task_path("infile", "scale_add.py")},
                       source=read_task("infile", "scale_add.py"),
                       filename=task_path("infile", "scale_add.py"),
                       space={"NO_SUCH_PARAM": [1]}, seeds=[4], timeout=120)
    assert r["ok"] is True
    res = r["results"][0]
    assert res["status"] == "failed" and res["stage"] == "task"
    assert r["best"] is None


def test_autotune_explicit_configs_are_tried_as_listed(worker):
    # The host's tuning cache sends only the configurations it lacks: a list, not a space.
    task = {"form": "infile", "path": task_path("infile", "scale_add.py")}
    source = read_task("infile", "scale_add.py")
    r = worker.request("autotune", task=task, source=source, filename=task_path("infile", "scale_add.py"),
                       configs=[{"BLOCK_ROWS": 48}, {"BLOCK_ROWS": 32}], seeds=[4], generation="v5e",
                       timing={"min_runs": 2, "min_seconds": 0.0}, timeout=180)
    assert r["ok"] is True, r
    # The tests' workers run with the compiler off (tests/conftest.py): checked and timed instead.
    assert r["ranking"]["basis"] == "run" and r["ranking"]["compiler"] == "turned off (MAXKERNEL_TPU_COMPILE=0)"
    assert r["total"] == 2
    assert {res["config"]["BLOCK_ROWS"]: res["status"] for res in r["results"]} == {32: "ok", 48: "incorrect"}
    bad = worker.request("autotune", task=task, source=source, configs=[], seeds=[4], timeout=60)
    assert bad["ok"] is False and "configs" in bad["error"]["message"]
