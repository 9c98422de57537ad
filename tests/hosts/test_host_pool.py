"""Several hosts at once (`--host a,b`): a real `maxkernel optimize` search spread over two real
local hosts (each its own worker processes), a pool with a host that cannot be reached, and a
pool whose hosts report different devices. Nothing is mocked.
"""
import shutil

from conftest import ROOT, free_port

KERNEL = ROOT / "tests" / "optimize" / "kernels" / "scale_rows.py"
# Graph search, parallel lineages: two evaluations are in flight at once (concurrency 2).
SEARCH = ("--mode", "graph", "--search", "parallel", "--beam", "2", "--branches", "2",
          "--concurrency", "2", "--no-cache", "--no-report", "--format", "json",
          "--roofline", "0")  # the evaluation budget, not the roofline, ends these searches


def local_host(name, python_exe):
    # One worker per lane: a second job in flight can only run at once on the other host.
    return {"name": name, "kind": "local", "python": python_exe, "compileSlots": 1,
            "timingSlots": 1}


def closed_port_host(name, python_exe, tmp_path):
    return {"name": name, "kind": "ssh", "destination": "nobody@127.0.0.1", "port": free_port(),
            "sshOptions": ["StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null"],
            "connectTimeoutSeconds": 5, "python": python_exe, "remoteDir": str(tmp_path / "r")}


def optimize(run_cli, kernel, hosts, host, store, budget, timeout=900):
    return run_cli("optimize", kernel, "--hosts", hosts, "--host", host, "--store", store,
                   "--budget", budget, *SEARCH, timeout=timeout)


def verdicts(out):
    """What a search decided, independent of where and in which order nodes were evaluated."""
    return sorted((n["code_hash"], n["status"], n["score_s"]) for n in out["nodes"])


def test_a_search_over_two_hosts_uses_both_and_decides_as_one_host_does(
        run_cli, write_hosts, tmp_path, python_exe):
    kernel = tmp_path / "scale_rows.py"
    shutil.copy(KERNEL, kernel)
    hosts = write_hosts(local_host("a", python_exe), local_host("b", python_exe))
    budget = "evaluations=6,iterations=10"

    pool = optimize(run_cli, kernel, hosts, "a,b", tmp_path / "pool.sqlite", budget)
    assert pool.returncode == 0, pool.describe()
    out = pool.data
    assert out["host"] == "a,b"
    assert out["cost"]["evaluations"] == 6, pool.describe()
    ran_on = [n["host"] for n in out["nodes"] if n["host"]]
    assert set(ran_on) == {"a", "b"}, pool.describe()
    # The progress line says where each node ran.
    assert " on host a" in pool.stderr and " on host b" in pool.stderr, pool.describe()

    single = optimize(run_cli, kernel, hosts, "a", tmp_path / "single.sqlite", budget)
    assert single.returncode == 0, single.describe()
    assert {n["host"] for n in single.data["nodes"] if n["host"]} == {"a"}
    assert verdicts(out) == verdicts(single.data)
    assert out["best"] == single.data["best"]


def test_an_unreachable_host_is_set_aside_and_the_search_continues(
        run_cli, write_hosts, tmp_path, python_exe):
    kernel = tmp_path / "scale_rows.py"
    shutil.copy(KERNEL, kernel)
    # The dead host comes first: on an idle pool, ties go to the first host.
    hosts = write_hosts(closed_port_host("dead", python_exe, tmp_path),
                        local_host("alive", python_exe))
    r = optimize(run_cli, kernel, hosts, "dead,alive", tmp_path / "s.sqlite",
                 "evaluations=3,iterations=10")
    assert r.returncode == 0, r.describe()
    assert r.data["status"] == "done", r.describe()
    assert "host dead set aside" in r.stderr and "connection refused" in r.stderr, r.describe()
    assert {n["host"] for n in r.data["nodes"] if n["host"]} == {"alive"}, r.describe()
    assert all(n["status"] in ("correct", "incorrect") for n in r.data["nodes"]), r.describe()


def test_a_pool_with_no_reachable_host_says_why_for_each(run_cli, write_hosts, tmp_path,
                                                          python_exe):
    hosts = write_hosts(closed_port_host("x", python_exe, tmp_path),
                        {"name": "y", "kind": "command", "command": ["false", "{command}"],
                         "remoteDir": str(tmp_path / "y"), "python": python_exe})
    r = run_cli("optimize", KERNEL, "--hosts", hosts, "--host", "x", "--host", "y", "--store",
                tmp_path / "s.sqlite", *SEARCH, timeout=120)
    assert r.returncode == 2, r.describe()
    assert "no host of x,y answered" in r.stderr, r.describe()
    assert "x: " in r.stderr and "connection refused" in r.stderr, r.describe()
    assert "installing the worker on y failed" in r.stderr, r.describe()
    # For lower/test/profile/bench the host failed, not the usage: exit 3 as for one host.
    lower = run_cli("lower", KERNEL, "--hosts", hosts, "--host", "x,y", timeout=120)
    assert lower.returncode == 3, lower.describe()
    assert "no host of x,y answered" in lower.stderr, lower.describe()


def test_hosts_that_report_different_devices_are_refused(run_cli, write_hosts, tmp_path,
                                                         python_exe):
    # "other" runs the same python, but its hello reports another JAX version.
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import jax\njax.__version__ = '0.0.1+other'\n")
    wrapper = tmp_path / "other-python"
    wrapper.write_text(f"#!/bin/sh\nexec env PYTHONPATH={site} {python_exe} \"$@\"\n")
    wrapper.chmod(0o755)
    other = local_host("other", str(wrapper))
    hosts = write_hosts(local_host("a", python_exe), other)
    r = run_cli("optimize", KERNEL, "--hosts", hosts, "--host", "a,other", "--store",
                tmp_path / "s.sqlite", *SEARCH, timeout=180)
    assert r.returncode == 2, r.describe()
    assert "(cpu/cpu/jax-0.0.1+other) differ" in r.stderr, r.describe()
    assert "must not be mixed in one search" in r.stderr, r.describe()
    assert not r.stdout.strip(), r.describe()  # no run was started


def test_host_lists_are_checked(run_cli, write_hosts, tmp_path, python_exe):
    hosts = write_hosts(local_host("a", python_exe))
    r = run_cli("optimize", KERNEL, "--hosts", hosts, "--host", "a,,b", timeout=60)
    assert r.returncode == 2 and "empty host name" in r.stderr, r.describe()
    r = run_cli("lower", KERNEL, "--hosts", hosts, "--host", "a,nope", timeout=60)
    assert r.returncode == 2 and "unknown host 'nope'" in r.stderr, r.describe()
