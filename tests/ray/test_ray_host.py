"""The ray host kind on a real two-node cluster on loopback: a graph search spread over both nodes
gives the local host's verdicts and best node; a node killed mid-search loses nothing and
evaluates nothing twice; an empty address and a missing device resource are clear errors."""
import collections
import json
import os
import shutil
import subprocess
import time

from conftest import (
    HEAD_IP,
    ROOT,
    SECOND_IP,
    ConnectionWatch,
    free_port,
    maxkernel,
    python,
    read_journal,
    wait_until,
)

KERNEL = ROOT / "tests" / "optimize" / "kernels" / "scale_rows.py"
SCALE_ADD = ROOT / "tests" / "worker" / "tasks" / "infile" / "scale_add.py"
SEARCH = ["--mode", "graph", "--search", "beam", "--beam", "2", "--branches", "2",
          "--budget", "evaluations=5,iterations=10"]


def optimize_args(tmp_path, *host):
    kernel = tmp_path / KERNEL.name
    kernel.write_text(KERNEL.read_text())
    return [maxkernel(), "optimize", str(kernel), "--python", python(), "--store",
            str(tmp_path / "store.db"), "--format", "json", "--no-report", *SEARCH, *host]


def journal_env(tmp_path):
    journal = tmp_path / "journal.jsonl"
    return journal, dict(os.environ, MAXKERNEL_RAY_JOURNAL=str(journal))


def verdicts(result):
    """Per node: what it was, its verdict and its score; and the best node."""
    nodes = [(n["id"], n.get("parent"), n["code_hash"], n["status"], n.get("description"),
              round(n.get("speedup") or 0, 6)) for n in result["nodes"]]
    return nodes, result["best"]["node"]


def run_cli(*args, env=None, timeout=300):
    start = time.monotonic()
    r = subprocess.run([maxkernel(), *map(str, args)], capture_output=True, text=True,
                       timeout=timeout, env=env, check=False)
    return r, time.monotonic() - start


_local = {}


def local_search(tmp_path_factory):
    """The same search on the local host, once per session: what the cluster must reproduce."""
    if "result" not in _local:
        tmp = tmp_path_factory.mktemp("local")
        r = subprocess.run(optimize_args(tmp), capture_output=True, text=True, timeout=600,
                           cwd=tmp, check=False)
        assert r.returncode == 0, r.stderr[-3000:]
        _local["result"] = json.loads(r.stdout)
    return _local["result"]


def test_a_search_over_both_nodes_matches_the_local_host(cluster, tmp_path, tmp_path_factory):
    hosts = tmp_path / "hosts.json"
    hosts.write_text(json.dumps([{"name": "cluster", "kind": "ray", "address": cluster.address}]))
    journal, env = journal_env(tmp_path)
    with ConnectionWatch() as watch:
        r = subprocess.run(optimize_args(tmp_path, "--host", "cluster", "--hosts", hosts),
                           capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path,
                           check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    on_cluster = json.loads(r.stdout)
    assert verdicts(on_cluster) == verdicts(local_search(tmp_path_factory))
    assert {n["host"] for n in on_cluster["nodes"] if n.get("host")} == {"cluster"}

    done = [e for e in read_journal(journal) if e["event"] == "done" and e["op"] != "hello"]
    assert {e["node_ip"] for e in done} == {HEAD_IP, SECOND_IP}, done
    assert {e["lane"] for e in done if e["op"] == "evaluate"} == {"timing"}
    assert {e["lane"] for e in done if e["op"] == "lower"} == {"compile"}
    assert not [e for e in read_journal(journal) if e["event"] == "host lost"]
    assert watch.addresses and not watch.outside_loopback(), watch.addresses


def test_a_node_killed_mid_search_loses_nothing_and_evaluates_nothing_twice(
        fresh_cluster, tmp_path, tmp_path_factory):
    expected = verdicts(local_search(tmp_path_factory))
    journal, env = journal_env(tmp_path)
    search = subprocess.Popen(optimize_args(tmp_path, "--host", f"ray:{fresh_cluster.address}"),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                              cwd=tmp_path)

    def evaluating_on_second_node():
        return any(e["event"] == "start" and e["op"] == "evaluate" and e["node_ip"] == SECOND_IP
                   for e in read_journal(journal))

    try:
        assert wait_until(evaluating_on_second_node, 300), read_journal(journal)
        fresh_cluster.second.kill()
        killed_at = time.time()
        out, err = search.communicate(timeout=600)
    finally:
        search.kill()
    assert search.returncode == 0, err[-3000:]
    assert verdicts(json.loads(out)) == expected

    events = read_journal(journal)
    lost = [e for e in events if e["event"] == "host lost"]
    assert lost and {e["node_ip"] for e in lost} == {SECOND_IP}, events
    assert "retrying the evaluate once on another slot" in err
    for e in lost:
        retried = [d for d in events if d["event"] == "done" and d["digest"] == e["digest"]]
        assert [d["node_ip"] for d in retried] == [HEAD_IP], (e, retried)
    evaluated = collections.Counter(e["digest"] for e in events
                                    if e["op"] == "evaluate" and e["event"] == "done")
    assert evaluated and max(evaluated.values()) == 1, evaluated
    after = [e for e in events if e["event"] == "done" and e["t"] > killed_at]
    assert after and {e["node_ip"] for e in after} == {HEAD_IP}


def test_an_address_where_nothing_listens_is_a_clear_error_within_seconds():
    address = f"127.0.0.1:{free_port()}"
    r, elapsed = run_cli("lower", SCALE_ADD, "--python", python(), "--host", f"ray:{address}",
                         "--format", "json", timeout=60)
    assert r.returncode == 3, (r.stdout, r.stderr[-2000:])
    reply = json.loads(r.stdout)
    assert reply["status"] == "unreachable"
    assert f"no Ray cluster answers at {address}: Connection refused" in reply["message"]
    assert elapsed < 10, elapsed


def test_a_cluster_without_the_device_resource_is_a_clear_error(cluster, tmp_path):
    hosts = tmp_path / "hosts.json"
    hosts.write_text(json.dumps([{"name": "gpus", "kind": "ray", "address": cluster.address,
                                  "deviceResource": "GPU"}]))
    r, elapsed = run_cli("test", SCALE_ADD, "--python", python(), "--host", "gpus", "--hosts",
                         hosts, "--format", "json", timeout=120)
    assert r.returncode == 3, (r.stdout, r.stderr[-2000:])
    message = json.loads(r.stdout)["message"]
    assert f"the Ray cluster at {cluster.address} has no 'GPU' resource" in message, message
    assert "TPU" in message  # what the nodes do offer
    assert elapsed < 30, elapsed


def test_a_worker_that_crashes_on_a_node_is_a_crash_as_on_any_host(cluster, tmp_path):
    """A worker whose `lower` ends its own process (exit code 7): a candidate cannot do that any
    more (it runs in a child of the worker), so the crash comes from a copy of the worker."""
    copy = tmp_path / "crashing" / "tpu"  # the Ray driver sits beside the worker (tpu/ray)
    for part in ("worker", "ray"):
        shutil.copytree(ROOT / "tpu" / part, copy / part, ignore=shutil.ignore_patterns("__pycache__"))
    worker = copy / "worker"
    op = worker / "mkworker" / "ops" / "lower.py"
    marker = "def op_lower(req, cancel, progress) -> dict:\n"
    assert marker in op.read_text()
    op.write_text(op.read_text().replace(marker, marker + "    import os\n    os._exit(7)\n", 1))
    r, _ = run_cli("lower", SCALE_ADD, "--python", python(), "--host", f"ray:{cluster.address}",
                   "--format", "json", timeout=120, env=dict(os.environ, MAXKERNEL_WORKER_DIR=str(worker)))
    assert r.returncode == 3, (r.stdout, r.stderr[-2000:])
    reply = json.loads(r.stdout)
    assert reply["status"] == "crashed", reply
    assert "exited with code 7" in reply["message"], reply
