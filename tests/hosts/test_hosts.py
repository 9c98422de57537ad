"""`maxkernel lower|test` on real kernel hosts: a real sshd on loopback, command hosts, and the
local host, with the real worker and the real CLI binary. Nothing is mocked.

Exit status contract: 0 ok, 1 the kernel failed, 2 usage, 3 the host failed.
"""
import hashlib
import os
import re
import shutil
import tempfile
import uuid
from pathlib import Path

import pytest

from conftest import TASKS, free_port, keygen, pids_with_cmdline, wait_until, worker_files

SCALE_ADD = TASKS / "scale_add.py"
BUNDLE_LOG = r"worker bundle ([0-9a-f]{16}) on {host}: (installed|already installed)"


def bundle_hash(worker_dir: Path) -> str:
    """The CLI's bundle hash: sha256 over path NUL content NUL of the bundle's files (every .py
    under the worker directory, by relative path, sorted)."""
    h = hashlib.sha256()
    for rel in worker_files(worker_dir):
        h.update(rel.encode() + b"\0" + (worker_dir / rel).read_bytes() + b"\0")
    return h.hexdigest()


def bundle_lines(stderr: str, host: str):
    return re.findall(BUNDLE_LOG.replace("{host}", re.escape(host)), stderr)


def task_variant(dst: Path, body_prefix: str) -> Path:
    """scale_add.py with `body_prefix` (indented statements) at the top of `candidate`."""
    text = SCALE_ADD.read_text()
    marker = "def candidate(x, y):\n"
    assert marker in text
    dst.write_text(text.replace(marker, marker + body_prefix, 1))
    return dst


def worker_workdir(r):
    """The worker's scratch dir, from its first log line in stderr_tail."""
    m = re.search(r"started; workdir (\S+);", (r.data or {}).get("stderr_tail") or "")
    return Path(m.group(1)) if m else None


def remove_workdir(path):
    """Removes a worker scratch dir that a killed or crashed worker of ours left behind."""
    if path and path.parent == Path(tempfile.gettempdir()) and \
            path.name.startswith("maxkernel-worker-"):
        shutil.rmtree(path, ignore_errors=True)


def assert_ok_lower(r, host):
    assert r.returncode == 0, r.describe()
    assert r.data is not None, r.describe()
    assert r.data["status"] == "ok" and r.data["host"] == host, r.describe()
    body = r.data["result"]
    assert body["ok"] is True and body["lowered"] is True, r.describe()
    assert body["lowered_for"] == "tpu"
    assert body["num_pallas_calls"] == 1
    call = body["pallas_calls"][0]
    assert call["grid"] == [4]
    assert call["kernel"] == "_kernel"
    assert [op["block_shape"] for op in call["operands"]] == [[16, 128]] * 3
    assert "stderr_tail" not in r.data  # only for infrastructure failures


# --------------------------------------------------------------------------------------- ssh


def test_ssh_install_lower_reuse_and_test(sshd, run_cli, write_hosts, worker_copy, tmp_path,
                                          python_exe):
    remote = tmp_path / "remote"  # absolute, not created: the install does mkdir -p
    hosts = write_hosts(sshd.host("tpu-ssh", remote))

    first = run_cli("lower", SCALE_ADD, "--host", "tpu-ssh", "--hosts", hosts, "--format", "json")
    assert_ok_lower(first, "tpu-ssh")
    lines = bundle_lines(first.stderr, "tpu-ssh")
    assert len(lines) == 1 and lines[0][1] == "installed", first.describe()
    short = lines[0][0]
    assert short == bundle_hash(worker_copy)[:16]

    # The bundle really is on the host, complete, byte-identical, with no half-unpacked leftovers.
    bundle = remote / f"worker-{short}"
    assert (bundle / ".complete").is_file()
    assert not (remote / f"worker-{short}.part").exists()
    assert sorted(p.name for p in remote.iterdir()) == [bundle.name]
    files = worker_files(worker_copy)
    assert "mkworker/judge/judge.py" in files  # the package's subfolders travel too
    for rel in files:
        assert (bundle / rel).read_bytes() == (worker_copy / rel).read_bytes(), rel
    # ... and the login went through our sshd with our key.
    assert re.search(r"Accepted publickey for \S+ from 127\.0\.0\.1",
                     sshd.log_path.read_text(errors="replace")), sshd.log_path.read_text()

    second = run_cli("lower", SCALE_ADD, "--host", "tpu-ssh", "--hosts", hosts, "--format", "json")
    assert_ok_lower(second, "tpu-ssh")
    lines = bundle_lines(second.stderr, "tpu-ssh")
    assert lines == [(short, "already installed")], second.describe()
    assert sorted(p.name for p in remote.iterdir()) == [bundle.name]

    test = run_cli("test", SCALE_ADD, "--host", "tpu-ssh", "--hosts", hosts, "--format", "json",
                   "--store", tmp_path / "store.sqlite", "--no-cache", "--seeds", "1,2")
    assert test.returncode == 0, test.describe()
    assert test.data["status"] == "ok" and test.data["from_cache"] is False, test.describe()
    assert test.data["result"]["ok"] is True and test.data["result"]["correct"] is True
    assert test.data["result"]["seeds"] == [1, 2]


def test_ssh_replaces_an_incomplete_install(sshd, run_cli, write_hosts, worker_copy, tmp_path):
    """A bundle dir without .complete (an interrupted install) and a stale .part are replaced."""
    remote = tmp_path / "remote"
    short = bundle_hash(worker_copy)[:16]
    broken = remote / f"worker-{short}"
    broken.mkdir(parents=True)
    (broken / "maxkernel_worker.py").write_text("raise SystemExit(99)\n")
    stale = remote / f"worker-{short}.part"
    stale.mkdir()
    (stale / "junk").write_text("junk")
    hosts = write_hosts(sshd.host("tpu-ssh", remote))
    r = run_cli("lower", SCALE_ADD, "--host", "tpu-ssh", "--hosts", hosts, "--format", "json")
    assert_ok_lower(r, "tpu-ssh")
    assert bundle_lines(r.stderr, "tpu-ssh") == [(short, "installed")], r.describe()
    assert (broken / ".complete").is_file()
    assert (broken / "maxkernel_worker.py").read_bytes() == \
        (worker_copy / "maxkernel_worker.py").read_bytes()
    assert not stale.exists()


@pytest.mark.parametrize("host, expect", [
    ({"name": "elsewhere", "kind": "local"}, "unknown host 'h'"),
    ({"name": "h", "kind": "telnet"}, "kind must be local, ssh, command or ray"),
    ({"name": "h", "kind": "ssh"}, "ssh needs a destination"),
    ({"name": "h", "kind": "command", "command": ["sh", "-c", "true"]}, "{command}"),
], ids=["unknown-name", "bad-kind", "ssh-no-destination", "command-no-placeholder"])
def test_bad_host_settings_are_usage_errors(host, expect, run_cli, write_hosts):
    hosts = write_hosts(host)
    r = run_cli("lower", SCALE_ADD, "--host", "h", "--hosts", hosts, "--format", "json",
                timeout=30)
    assert r.returncode == 2, r.describe()
    assert expect in r.stderr, r.describe()
    assert r.stdout == ""


def metachar_name(token):
    return f"it's a \"kernel\" $(touch {token}) ; `touch {token}` & | <x> $HOME.py"


@pytest.mark.parametrize("kind", ["ssh", "command"])
def test_shell_metacharacters_in_paths(kind, sshd, run_cli, write_hosts, tmp_path, python_exe):
    token = f"PWNED_{uuid.uuid4().hex[:10]}"
    task_dir = tmp_path / f"tasks $(touch {token})"
    task_dir.mkdir()
    task = task_dir / metachar_name(token)
    shutil.copy(SCALE_ADD, task)
    remote = tmp_path / f"remote dir it's $(touch {token}) `touch {token}`;"
    if kind == "ssh":
        host = sshd.host("tricky", remote)
    else:
        host = {"name": "tricky", "kind": "command", "command": ["sh", "-c", "{command}"],
                "remoteDir": str(remote), "python": python_exe}
    hosts = write_hosts(host)
    cwd = tmp_path / "cwd"
    cwd.mkdir()

    r = run_cli("lower", task, "--host", "tricky", "--hosts", hosts, "--format", "json", cwd=cwd)
    assert_ok_lower(r, "tricky")
    assert r.data["file"] == str(task)
    lines = bundle_lines(r.stderr, "tricky")
    assert lines and lines[0][1] == "installed", r.describe()
    assert (remote / f"worker-{lines[0][0]}" / ".complete").is_file()

    places = [cwd, tmp_path, Path.home(), Path("/tmp"), Path("/"), remote, task_dir]
    planted = [str(p / token) for p in places if (p / token).exists()]
    planted += [str(p) for p in tmp_path.rglob(f"{token}*") if p.name.startswith(token)]
    assert planted == [], f"a shell ran part of a path: {planted}"


def test_unauthorized_key_is_an_authentication_failure(fresh_sshd, run_cli, write_hosts,
                                                      tmp_path):
    bad_key = keygen(tmp_path / "stranger_ed25519")
    hosts = write_hosts(fresh_sshd.host("intruder", tmp_path / "remote", identity=bad_key))
    r = run_cli("lower", SCALE_ADD, "--host", "intruder", "--hosts", hosts, "--format", "json",
                timeout=60)
    assert r.returncode == 3, r.describe()
    assert r.data["status"] == "unreachable", r.describe()
    assert "authentication failed" in r.data["message"], r.describe()
    assert r.data["result"] is None
    assert not (tmp_path / "remote").exists()


def test_unauthorized_key_does_not_ride_an_existing_connection(sshd, run_cli, write_hosts,
                                                               tmp_path):
    good = write_hosts(sshd.host("good", tmp_path / "remote"))
    assert run_cli("lower", SCALE_ADD, "--host", "good", "--hosts", good).returncode == 0
    bad_key = keygen(tmp_path / "stranger_ed25519")
    bad = write_hosts(sshd.host("intruder", tmp_path / "remote", identity=bad_key),
                      name="bad-hosts.json")
    r = run_cli("lower", SCALE_ADD, "--host", "intruder", "--hosts", bad, "--format", "json")
    assert r.returncode == 3, r.describe()
    assert "authentication failed" in r.data["message"], r.describe()


def test_closed_port_is_connection_refused(run_cli, write_hosts, tmp_path, python_exe):
    port = free_port()  # bound and released: nothing listens there
    host = {"name": "nobody", "kind": "ssh", "destination": "root@127.0.0.1", "port": port,
            "sshOptions": ["StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null"],
            "connectTimeoutSeconds": 5, "python": python_exe, "remoteDir": str(tmp_path / "r")}
    hosts = write_hosts(host)
    r = run_cli("lower", SCALE_ADD, "--host", "nobody", "--hosts", hosts, "--format", "json",
                timeout=60)
    assert r.returncode == 3, r.describe()
    assert r.data["status"] == "unreachable", r.describe()
    assert "connection refused" in r.data["message"].lower(), r.describe()
    assert r.elapsed < 5 + 10, r.describe()

    text = run_cli("lower", SCALE_ADD, "--host", "nobody", "--hosts", hosts, timeout=60)
    assert text.returncode == 3, text.describe()
    assert text.stdout.startswith("host nobody: unreachable: "), text.describe()


# ---------------------------------------------------------------------------------- command


def test_command_host_with_garbage_on_stdout(run_cli, write_hosts, tmp_path, python_exe):
    host = {"name": "noisy", "kind": "command",
            "command": ["sh", "-c", "echo this-is-not-json; {command}"],
            "remoteDir": str(tmp_path / "remote"), "python": python_exe}
    hosts = write_hosts(host)
    r = run_cli("lower", SCALE_ADD, "--host", "noisy", "--hosts", hosts, "--format", "json",
                timeout=90)
    assert r.returncode == 3, r.describe()
    assert r.data["status"] in ("unreachable", "malformed output"), r.describe()
    assert "not a protocol message" in r.data["message"], r.describe()
    assert "this-is-not-json" in r.data["message"], r.describe()
    assert "stderr_tail" in r.data


# ----------------------------------------------------------------------------- local worker


def crashing_worker(worker_copy, tmp_path) -> Path:
    """A copy of the worker whose `lower` ends the worker's own process (exit code 7) mid-request.
    A candidate can no longer do that (it runs in a child of its own, below), so the crash is the
    worker's own: a bug, or the OOM killer."""
    private = tmp_path / "crashing-worker"
    shutil.copytree(worker_copy, private, ignore=shutil.ignore_patterns("__pycache__"))
    op = private / "mkworker" / "ops" / "lower.py"
    marker = "def op_lower(req, cancel, progress) -> dict:\n"
    text = op.read_text()
    assert marker in text
    op.write_text(text.replace(marker, marker + "    import os\n    os._exit(7)\n", 1))
    return private


def test_worker_crash_mid_request(run_cli, worker_copy, tmp_path, python_exe):
    r = run_cli("lower", SCALE_ADD, "--python", python_exe, "--format", "json", timeout=90,
                worker_dir=crashing_worker(worker_copy, tmp_path))
    assert r.returncode == 3, r.describe()
    assert r.data["status"] == "crashed", r.describe()
    assert "exited with code 7" in r.data["message"], r.describe()
    assert isinstance(r.data.get("stderr_tail"), str), r.describe()
    assert r.data["result"] is None
    # The tail is the worker's own stderr: its start-up line names its scratch dir.
    workdir = worker_workdir(r)
    assert workdir is not None, r.describe()
    remove_workdir(workdir)  # os._exit skips the worker's cleanup


def test_worker_crash_over_ssh(sshd, run_cli, worker_copy, write_hosts, tmp_path):
    hosts = write_hosts(sshd.host("tpu-ssh", tmp_path / "remote"))
    r = run_cli("lower", SCALE_ADD, "--host", "tpu-ssh", "--hosts", hosts, "--format", "json",
                timeout=90, worker_dir=crashing_worker(worker_copy, tmp_path))
    assert r.returncode == 3, r.describe()
    assert r.data["status"] == "crashed", r.describe()
    assert "exited with code 7" in r.data["message"], r.describe()
    assert isinstance(r.data.get("stderr_tail"), str), r.describe()
    remove_workdir(worker_workdir(r))


def test_a_candidate_that_exits_ends_its_own_process_not_the_worker(run_cli, tmp_path, python_exe):
    """The candidate runs in a child of the worker's: its exit is the lower's error, with the
    code, and the worker answers."""
    task = task_variant(tmp_path / "crash.py", "    import os\n    os._exit(7)\n")
    r = run_cli("lower", task, "--python", python_exe, "--format", "json", timeout=90)
    assert r.returncode == 1, r.describe()
    assert r.data["status"] == "failed", r.describe()
    assert "the candidate's process ended without an answer: it exited with code 7" in r.describe()


def hang_task(tmp_path):
    return task_variant(tmp_path / "hang.py", "    import time\n    time.sleep(600)\n")


def test_hang_past_the_timeout_kills_the_worker(run_cli, worker_copy, tmp_path, python_exe):
    private = tmp_path / "worker"
    shutil.copytree(worker_copy, private, ignore=shutil.ignore_patterns("__pycache__"))
    marker = str(private / "maxkernel_worker.py")
    before = pids_with_cmdline(marker)
    assert before == set(), before

    r = run_cli("lower", hang_task(tmp_path), "--python", python_exe, "--format", "json",
                "--timeout", "3", worker_dir=private, timeout=60)
    assert r.returncode == 3, r.describe()
    assert r.data["status"] == "timed out", r.describe()
    assert "within 3" in r.data["message"], r.describe()
    assert r.elapsed < 30, r.describe()
    started = [int(p) for p in re.findall(r"started the worker on local \(pid (\d+)\)", r.stderr)]
    assert started, r.describe()
    left = wait_until(lambda: not pids_with_cmdline(marker), 10)
    assert left, f"worker processes left behind: {pids_with_cmdline(marker)}"
    for pid in started:
        assert not os.path.exists(f"/proc/{pid}") or \
            open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"
    remove_workdir(worker_workdir(r))  # see the xfail test below


def test_timed_out_local_worker_leaves_no_scratch_dir(run_cli, tmp_path, python_exe):
    r = run_cli("lower", hang_task(tmp_path), "--python", python_exe, "--format", "json",
                "--timeout", "3", timeout=60)
    assert r.data["status"] == "timed out", r.describe()
    workdir = worker_workdir(r)
    assert workdir is not None, r.describe()
    try:
        assert not workdir.exists(), f"{workdir} left behind"
    finally:
        remove_workdir(workdir)


def test_hang_over_ssh_leaves_no_remote_worker(sshd, run_cli, write_hosts, tmp_path):
    remote = tmp_path / "remote-hang"
    hosts = write_hosts(sshd.host("tpu-ssh", remote))
    marker = str(remote)
    assert pids_with_cmdline(marker) == set()
    r = run_cli("lower", hang_task(tmp_path), "--host", "tpu-ssh", "--hosts", hosts, "--format",
                "json", "--timeout", "3", timeout=60)
    assert r.returncode == 3, r.describe()
    assert r.data["status"] == "timed out", r.describe()
    assert r.elapsed < 30, r.describe()
    # The ssh client is killed; the remote worker sees EOF on stdin and must exit by itself.
    gone = wait_until(lambda: not pids_with_cmdline(marker), 15, interval=0.2)
    assert gone, f"left behind on the host: {pids_with_cmdline(marker)}"


# ------------------------------------------------------------------------- evaluation cache


def test_evaluation_cache(run_cli, tmp_path, python_exe):
    task = tmp_path / "scale_add.py"
    shutil.copy(SCALE_ADD, task)
    store = tmp_path / "store.sqlite"

    def test_run(*extra):
        r = run_cli("test", task, "--python", python_exe, "--store", store, "--format", "json",
                    *extra, timeout=120)
        assert r.returncode == 0, r.describe()
        assert r.data["status"] == "ok", r.describe()
        assert r.data["result"]["correct"] is True, r.describe()
        return r

    first = test_run()
    assert first.data["from_cache"] is False
    assert store.is_file()

    second = test_run()
    assert second.data["from_cache"] is True, second.describe()
    assert second.data["result"] == first.data["result"]
    assert second.elapsed < 0.6 * first.elapsed, (first.elapsed, second.elapsed)

    # Comments are not code: still a hit.
    text = task.read_text()
    assert "# PALLAS_CALL_LINE" in text
    task.write_text("# an edited comment at the top\n"
                    + text.replace("# PALLAS_CALL_LINE", "# the call, reworded")
                    + "\n# and one at the end\n")
    comment = test_run()
    assert comment.data["from_cache"] is True, comment.describe()
    assert comment.data["result"] == first.data["result"]

    # Code is: BLOCK_ROWS 16 -> 32 misses, and is evaluated afresh.
    assert "BLOCK_ROWS = 16" in task.read_text()
    task.write_text(task.read_text().replace("BLOCK_ROWS = 16", "BLOCK_ROWS = 32"))
    code = test_run()
    assert code.data["from_cache"] is False, code.describe()

    # --no-cache evaluates even when a verdict is cached.
    forced = test_run("--no-cache")
    assert forced.data["from_cache"] is False, forced.describe()
