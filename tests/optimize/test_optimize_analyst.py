"""The Profile analyst in a recorded Auto run against real workers (fixtures/make_analyst_chain.py,
served by a replay server this test starts, so its request log shows what each sub-agent was
sent): before the planner plans a parent's children the analyst reads the parent's numbers and
rule diagnosis, its answer reaches the planner, it is asked once per parent (the answer is
recorded on the node), its usage is paid for, and each LLM child records the diagnosis it
answers. A rate-limited analyst does not stop the run: the planner gets the rule diagnosis
alone and the log says why."""
import json
import os
import urllib.request

from optimize_helpers import (
    FIXTURES,
    kernel_copy,
    node_rows,
    optimize,
    replay_server,
    sent_text,
)

FIXTURE = FIXTURES / "analyst_chain_openai.json"
KEY = "sk-analyst-0123456789"


def fixture_usage():
    """(prompt, completion) tokens of each fixture entry, in order."""
    out = []
    for e in json.loads(FIXTURE.read_text())["entries"]:
        usage = json.loads(e["chunks"][-2].removeprefix("data: "))["usage"]
        out.append((usage["prompt_tokens"], usage["completion_tokens"]))
    return out


def run(tmp, *extra, faults=()):
    kernel = kernel_copy(tmp)
    store = tmp / "store.sqlite"
    env = dict(os.environ, OPENAI_API_KEY=KEY)
    with replay_server(FIXTURE) as (spec, read_log):
        base = spec.split("@", 1)[1].removesuffix("/v1")
        for fault in faults:
            request = urllib.request.Request(f"{base}/_fault", data=json.dumps(fault).encode(),
                                             method="POST")
            urllib.request.urlopen(request, timeout=10).read()
        r = optimize(kernel, store, "--llm", spec, "--branches", "1", *extra, env=env)
        log = read_log()
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), log, store, r.stderr


def test_the_analysts_reading_of_each_parent_reaches_its_planner_once_per_parent(tmp_path):
    out, log, store, _ = run(tmp_path, "--budget", "iterations=3")
    assert out["status"] == "done" and out["stop_reason"] == "budget: 3 iterations", out
    nodes = {n["id"]: n for n in out["nodes"]}
    assert [nodes[i]["strategy"] for i in sorted(nodes)] == [
        "baseline", "llm:narrow_tiles", "llm:row_block_64", "llm:single_block"]
    assert [nodes[i]["parent"] for i in (1, 2, 3)] == [0, 0, 2]
    assert all(n["status"] == "correct" for n in nodes.values()), out["nodes"]
    assert nodes[1]["speedup"] < 1.0 < nodes[2]["speedup"] < nodes[3]["speedup"]

    # Three expansions (the root twice, then node 2), two analyst calls: one per parent.
    assert all(r["entry"] is not None for r in log), "a request found no answer meant for it"
    assert [r["purpose"] for r in log] == [
        "profile_analyst", "planner", "implementer", "planner", "implementer",
        "profile_analyst", "planner", "implementer"]
    analyst_root, planner_1, _, planner_2, _, analyst_node2, planner_3, _ = map(sent_text, log)

    # The analyst read the parent's numbers (from the real worker and the time model) and its
    # rule diagnosis, as the node recorded it.
    rows = {row[0]: row for row in node_rows(store, out["run"])}
    root_metrics, node2_metrics = json.loads(rows[0][5]), json.loads(rows[2][5])
    root_summary = root_metrics["bottleneck"]["summary"]
    node2_summary = node2_metrics["bottleneck"]["summary"]
    assert root_summary.startswith("grid overhead-bound"), root_summary
    assert "pallas_call `_kernel` (line 29): grid (32,)" in analyst_root
    assert "args[0]: 32 block fetches of 32 distinct blocks" in analyst_root
    assert "scored by: the Pallas interpreter's wall time on a CPU host" in analyst_root
    assert f"## Rule-based diagnosis\n{root_summary}\n" in analyst_root
    assert "## Device profile\n(none)" in analyst_root
    assert "grid (4,)" in analyst_node2 and f"## Rule-based diagnosis\n{node2_summary}\n" in analyst_node2

    # Each planner got the rule diagnosis and its own parent's analysis, in the labelled section.
    section = "## Diagnosis: what limits this kernel"
    for planner, summary, marker in ((planner_1, root_summary, "ANALYST-ROOT"),
                                     (planner_2, root_summary, "ANALYST-ROOT"),
                                     (planner_3, node2_summary, "ANALYST-ROWS64")):
        body = planner[planner.index(section):planner.index("## Knowledge")]
        assert summary in body and f"Profile analyst: bottleneck grid_overhead. {marker}" in body
    assert "ANALYST-ROOT" not in planner_3
    assert "- taller_row_blocks: Fewer, larger steps." in planner_1

    # The analysis is recorded on its parent; every LLM child records what it answers.
    assert root_metrics["analysis"]["evidence"].startswith("ANALYST-ROOT")
    assert node2_metrics["analysis"]["evidence"].startswith("ANALYST-ROWS64")
    assert nodes[2]["answers"] == (f"{root_summary}; profile analyst: grid_overhead -> "
                                   "Taller row blocks, fewer steps.")
    assert nodes[3]["answers"].startswith(f"{node2_summary}; profile analyst: grid_overhead -> ")

    # All eight calls, the analyst's included, are in the run's cost.
    usage = fixture_usage()
    assert out["cost"]["tokens_in"] == sum(p for p, _ in usage)
    assert out["cost"]["tokens_out"] == sum(c for _, c in usage)


def test_a_rate_limited_analyst_leaves_the_planner_the_rule_diagnosis(tmp_path):
    storm = [{"type": "rate_limit", "retry_after": 1, "count": 4}]  # every attempt of one call
    out, log, store, stderr = run(tmp_path, "--budget", "iterations=1", faults=storm)
    assert out["status"] == "done" and out["stop_reason"] == "budget: 1 iterations", out
    assert [r["purpose"] for r in log] == ["profile_analyst"] * 4 + ["planner", "implementer"]
    assert [r["fault"] for r in log[:4]] == ["rate_limit"] * 4
    assert "profile analyst: its call failed: rate-limited" in stderr
    assert "the planner gets the rule diagnosis alone" in stderr

    root_metrics = json.loads(node_rows(store, out["run"])[0][5])
    summary = root_metrics["bottleneck"]["summary"]
    assert root_metrics["analysis"]["error"].startswith("its call failed: rate-limited")
    planner = sent_text(log[4])
    body = planner[planner.index("## Diagnosis: what limits this kernel"):]
    assert summary in body and "Profile analyst: no answer (its call failed: rate-limited" in body
    nodes = {n["id"]: n for n in out["nodes"]}
    assert nodes[1]["strategy"] == "llm:narrow_tiles" and nodes[1]["status"] == "correct"
    assert nodes[1]["answers"] == f"{summary} -> Tile columns too."
    # Only the planner's and the implementer's answers were paid for.
    usage = fixture_usage()
    assert out["cost"]["tokens_in"] == usage[1][0] + usage[2][0]
