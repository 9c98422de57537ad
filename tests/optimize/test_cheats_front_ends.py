"""Issue 16 at the front ends: a candidate that fakes its measurement is refused or flagged with
the worker's exact message by `maxkernel test` (text and JSON, exit status 1, never the host's 3)
and can never be a search's best. The editor's Test lens is tests/transcript/test_cheat_verdicts.py;
the worker level is tests/worker/test_worker_cheats.py. Real binaries, real JAX workers.

The cheats of the `maxkernel test` tests are the worker suite's own files
(tests/worker/tasks/cheats/, the verdict's line marked `# cheat`); the search's are the
implementer's answers in fixtures/cheat_chain_openai.json (fixtures/make_cheat_chain.py)."""
import json
import os
import subprocess
import sys

import pytest
from optimize_helpers import (
    FIXTURES,
    ROOT,
    kernel_copy,
    maxkernel,
    optimize,
    python,
    replay_server,
    sent_text,
)

sys.path.insert(0, str(FIXTURES))
from make_cheat_chain import CHEATS, STRATEGIES

CHEAT_TASKS = ROOT / "tests" / "worker" / "tasks" / "cheats"

GATE = {
    "clock_rebind.py": ("module-attribute",
                        ("assigns `time.perf_counter`, an attribute of the imported `time`: a candidate may not "
                         "change what it imports (the worker's clock and checks use the same modules)")),
    "thread_start.py": ("concurrency",
                        "imports `threading`: a candidate may not start threads or processes, or signal them"),
}
WORK_MATMUL_64 = ("the work is done outside the kernel: XLA ops outside every pallas_call do 100% of the "
                  "reference's matmul FLOPs (524,288 of 524,288; the kernels do 0%); at most 50% may run "
                  "outside the kernels")
WORK_HOST_CALLBACK = ("the work is done outside the kernel: host callbacks (pure_callback/io_callback) return "
                      "8,192 bytes, 100% of the size of the reference's outputs; results computed in Python on "
                      "the host are not the kernel's")
WORK = {
    # file -> (rule, message, whether the verdict points at the line marked `# cheat`)
    "xla_matmul_copy.py": ("matmul_flops", WORK_MATMUL_64, True),
    "host_cache.py": ("host_callback", WORK_HOST_CALLBACK, False),
}


def cheat_line(text):
    (line,) = [i for i, l in enumerate(text.splitlines(), start=1) if "# cheat" in l]
    return line


def maxkernel_test(path, store, *extra):
    return subprocess.run([maxkernel(), "test", str(path), "--python", python(), "--store", str(store), *extra],
                          check=False, capture_output=True, text=True, timeout=300, cwd=path.parent)


def copy_cheat(tmp, name):
    text = (CHEAT_TASKS / name).read_text()
    path = tmp / name
    path.write_text(text)
    return path, cheat_line(text)


@pytest.mark.parametrize("name", sorted(GATE))
def test_maxkernel_test_refuses_a_gated_cheat_with_its_line(tmp_path, name):
    rule, what = GATE[name]
    path, line = copy_cheat(tmp_path, name)
    message = f"{name}:{line}: the candidate {what} [{rule}]"

    r = maxkernel_test(path, tmp_path / "store.sqlite", "--no-cache", "--format", "json")
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)  # the kernel failed, not the host (3)
    out = json.loads(r.stdout)
    assert out["status"] == "failed" and out["message"] == message
    err = out["result"]["error"]
    assert out["result"]["ok"] is False and err["kind"] == "refused" and err["rule"] == rule
    assert err["message"] == message
    assert err["file"] == str(path)
    assert [(v["line"], v["rule"]) for v in err["violations"]] == [(line, rule)]
    assert err["locations"][0]["line"] == line

    r = maxkernel_test(path, tmp_path / "store.sqlite")
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert r.stdout.splitlines() == [f"{name} on local",
                                     f"error (refused): {message}",
                                     f"  {path}:{line}:1: {what} [{rule}]"]


@pytest.mark.parametrize("name", sorted(WORK))
def test_maxkernel_test_flags_work_done_outside_the_kernel(tmp_path, name):
    rule, message, located = WORK[name]
    path, line = copy_cheat(tmp_path, name)

    r = maxkernel_test(path, tmp_path / "store.sqlite", "--no-cache", "--format", "json")
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    out = json.loads(r.stdout)
    body = out["result"]
    assert body["ok"] is True and body["correct"] is False  # it ran; its verdict is WRONG
    f = body["failure"]
    assert (f["kind"], f["rule"], f["message"]) == ("work_outside_kernel", rule, message)
    if located:
        assert f["locations"][0]["line"] == line
    assert body["timing"] is None and body["speedup"] is None  # never timed, never a speedup

    # The text form, here from the evaluation cache: the same verdict, nothing lost, the
    # verdict's line included (the location the editor's Test lens carries too).
    r = maxkernel_test(path, tmp_path / "store.sqlite")
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    lines = r.stdout.splitlines()
    assert lines[0] == f"{name} on local" and lines[1].startswith("WRONG")
    failure = lines.index(f"  failure (work_outside_kernel): {message}")
    if located:
        assert lines[failure + 1] == f"  {path}:{line}:1: {message}", lines
    else:
        assert not any(l.startswith(f"  {path}:") for l in lines), lines
    assert not any(l.strip().startswith(("candidate:", "speedup")) for l in lines)


# ---------------------------------------------------------------------------
# A search whose implementer proposes the cheats.

MATMUL_128 = ("the work is done outside the kernel: XLA ops outside every pallas_call do 100% of the "
              "reference's matmul FLOPs (4,194,304 of 4,194,304; the kernels do 0%); at most 50% may run "
              "outside the kernels")


def test_a_search_never_makes_a_cheat_best(tmp_path):
    kernel = kernel_copy(tmp_path, "matmul_tiles.py")
    store = tmp_path / "store.sqlite"
    env = dict(os.environ, OPENAI_API_KEY="sk-cheat-search-0123")
    with replay_server(FIXTURES / "cheat_chain_openai.json") as (spec, read_log):
        r = optimize(kernel, store, "--llm", spec, "--budget", "iterations=1", "--branches",
                     str(len(STRATEGIES)), env=env)
        log = read_log()
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["status"] == "done"
    nodes = {n["strategy"].removeprefix("llm:"): n for n in out["nodes"]}
    assert set(nodes) == {"baseline", *STRATEGIES}

    def refused(name, rule, what):
        line = cheat_line(CHEATS[name])
        return f"refused: {kernel.name}:{line}: the candidate {what} [{rule}] (line {line})"

    expected = {
        "fast_clock": ("failed", refused("fast_clock", *GATE["clock_rebind.py"])),
        "warm_thread": ("failed", refused("warm_thread", *GATE["thread_start.py"])),
        "xla_dot_copy": ("incorrect", f"incorrect: {MATMUL_128}"),
    }
    for name, (status, error) in expected.items():
        assert (nodes[name]["status"], nodes[name]["error"]) == (status, error), nodes[name]
    # The host-callback cache cannot even be compiled for TPU on a CPU host (JAX lowers a host
    # callback only for its own backend), so the compile check fails it before the work check.
    memo = nodes["memo_results"]
    assert memo["status"] == "failed" and memo["error"].startswith("lowering: lowering for TPU failed: ")
    assert memo["error"].endswith(f"(line {cheat_line(CHEATS['memo_results'])})")

    for name in CHEATS:
        assert nodes[name]["speedup"] is None and nodes[name]["score_s"] is None, nodes[name]
    honest = nodes["row_block_64"]
    assert honest["status"] == "correct" and honest["speedup"] > 1.0
    assert out["best"]["node"] == honest["id"] and out["best"]["speedup"] == honest["speedup"]
    cheat_ids = {nodes[name]["id"] for name in CHEATS}
    assert out["best"]["node"] not in cheat_ids

    # The debugger was told why each refused cheat was refused (the worker's words), and its
    # unchanged answers made no new node.
    debugged = [sent_text(rec) for rec in log if rec["purpose"] == "debugger"]
    for name in ("fast_clock", "warm_thread"):
        message = expected[name][1].removeprefix("refused: ").rsplit(" (line", 1)[0]
        assert sum(message in text for text in debugged) >= 1, name
    assert all(rec["entry"] is not None for rec in log), "a request found no answer meant for it"
