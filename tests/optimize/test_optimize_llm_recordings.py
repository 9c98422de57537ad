"""Recordings that differ the way real answers do (fixtures/make_varied_chain.py): different
kernels, a wrong one, one that does not lower, one that ignores its plan with a duplicate, served
by a replay server this test starts, so its request log shows what each sub-agent was sent: the
implementer the parent's code and its strategy, the debugger the worker's real lowering error and
the failing code. Also: the `usd` budget stops the run and no call is made after it."""
import json
import os
import sqlite3
import sys

from optimize_helpers import FIXTURES, kernel_copy, optimize, replay_server, sent_text

sys.path.insert(0, str(FIXTURES))
from make_varied_chain import STRATEGIES

VARIED = FIXTURES / "varied_chain_openai.json"
KEY = "sk-recordings-0123456789"


def run_llm(tmp, fixture, *extra):
    kernel = kernel_copy(tmp)
    store = tmp / "store.sqlite"
    env = dict(os.environ, OPENAI_API_KEY=KEY)
    with replay_server(fixture) as (spec, read_log):
        r = optimize(kernel, store, "--llm", spec, *extra, env=env)
        log = read_log()
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), log, kernel.read_text(), store


def test_varied_answers_become_the_nodes_they_should_and_each_agent_got_its_context(tmp_path):
    out, log, parent_code, store = run_llm(tmp_path, VARIED, "--budget", "iterations=1",
                                           "--branches", "5", "--concurrency", "2")
    assert out["status"] == "done" and out["stop_reason"] == "budget: 1 iterations"
    nodes = {n["strategy"].removeprefix("llm:"): n for n in out["nodes"]}
    # The answer that ignored its plan repeated single_block's code: no node; the rest made one.
    assert set(nodes) == {"baseline", "column_tiles", "single_block", "bias_folded", "row_block_12"}
    assert len({n["code_hash"] for n in out["nodes"]}) == len(out["nodes"])
    for name in ("column_tiles", "single_block", "row_block_12"):
        assert nodes[name]["status"] == "correct" and nodes[name]["speedup"] > 1.0, nodes[name]
    # Different kernels get different predictions; the wrong one is rejected by the reference.
    speedups = {nodes[n]["speedup"] for n in ("column_tiles", "single_block", "row_block_12")}
    assert len(speedups) == 3, speedups
    assert nodes["bias_folded"]["status"] == "incorrect" and nodes["bias_folded"]["speedup"] is None
    # Its wrong result went to the debugger, whose two fixes kept the wrong formula.
    assert nodes["bias_folded"]["description"].endswith(
        "(wrong result not fixed by the debugger in 2 attempts)"), nodes["bias_folded"]
    best = max((n for n in out["nodes"] if n["status"] == "correct"), key=lambda n: n["speedup"])
    assert out["best"]["node"] == best["id"] and best["strategy"] != "llm:bias_folded"
    with sqlite3.connect(store) as db:
        code = dict(db.execute("SELECT strategy, code FROM nodes WHERE run_id = ?", (out["run"],)))
    assert "BLOCK_ROWS = 32\n" in code["llm:row_block_12"], "the debugger's fix was not evaluated"
    assert "debugger" in nodes["row_block_12"]["description"]

    by_purpose = {}
    for record in log:
        by_purpose.setdefault(record["purpose"], []).append(record)
    assert len(by_purpose["planner"]) == 1 and len(by_purpose["implementer"]) == 5
    assert len(by_purpose["debugger"]) == 3  # row_block_12 once, bias_folded twice
    assert all(r["entry"] is not None for r in log), "a request found no answer meant for it"
    assert all(r["headers"]["authorization"] == f"Bearer {KEY}" for r in log)
    # The planner and every implementer were sent the parent's code (the kernel as written);
    # each implementer its own strategy.
    assert "o_ref[...] = x_ref[...] * 3.0 + b_ref[...]" in sent_text(by_purpose["planner"][0])
    whys = {name: why for name, why, _ in STRATEGIES}
    asked_for = []
    for record in by_purpose["implementer"]:
        text = sent_text(record)
        assert parent_code.strip() in text, "the implementer was not sent the parent's code"
        (strategy,) = [name for name, why in whys.items() if why in text]  # its own, only
        asked_for.append(strategy)
    assert sorted(asked_for) == sorted(whys), asked_for
    # The debugger was sent the worker's real lowering error and the code that caused it, and
    # for the wrong kernel the worker's correctness report.
    texts = [sent_text(r) for r in by_purpose["debugger"]]
    (debug,) = [t for t in texts if "Correctness report (seed " not in t]
    assert "divisible by 8 and 128" in debug and "BLOCK_ROWS = 12\n" in debug
    wrong = [t for t in texts if "Correctness report (seed " in t]
    assert len(wrong) == 2 and all("o_ref[...] = (x_ref[...] + b_ref[...]) * 3.0" in t for t in wrong)


def test_the_usd_budget_stops_the_run_and_no_call_is_made_after_it(tmp_path):
    chain = FIXTURES / "agent_chain_openai.json"
    out, log, _, _ = run_llm(tmp_path, chain, "--budget", "iterations=3,usd=0.0003",
                             "--branches", "2")
    assert out["status"] == "done"
    assert out["stop_reason"].startswith("LLM: the run's LLM budget is spent ($"), out["stop_reason"]
    assert "of $0.0003" in out["stop_reason"]
    # The profile analyst and the planner ($0.00028) were under the limit, so one implementer
    # call was made; it crossed the limit, and nothing was asked after that.
    assert [r["purpose"] for r in log] == ["profile_analyst", "planner", "implementer"]
    assert out["cost"]["usd"] >= 0.0003
    assert out["cost"]["tokens_in"] == 300 + 900 + 1500
    assert out["cost"]["tokens_out"] == 40 + 120 + 400
