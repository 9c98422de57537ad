"""profile: a trace is captured and summarised."""

import os

from worker_harness import read_task, task_path


def test_profile_summary(worker, tmp_path):
    r = worker.request("profile", task={"form": "infile", "path": task_path("infile", "scale_add.py")},
                       source=read_task("infile", "scale_add.py"),
                       filename=task_path("infile", "scale_add.py"), runs=3, seed=1,
                       out_dir=str(tmp_path / "trace"), timeout=180)
    assert r["ok"] is True, r
    assert os.path.exists(r["trace_file"]) and r["trace_file"].endswith(".json.gz")
    assert r["trace_dir"] == str(tmp_path / "trace")
    s = r["summary"]
    assert s["measured"] == "host"
    assert "interpreter" in s["note"]
    assert s["runs"] == 3 and len(s["run_wall_us"]) == 3
    assert s["op_time_us"] > 0
    assert [k["kernel"] for k in s["kernels"]] == ["_kernel"]
    assert 0 < s["pallas_share"] <= 1
    assert s["kernels"][0]["time_us"] > 0
    assert r["time_kind"] == "interpret"
