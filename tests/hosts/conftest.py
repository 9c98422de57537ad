"""Fixtures for the kernel-host tests: a real sshd on loopback, keys, hosts files, a private copy
of the worker, and a helper that runs the `maxkernel` CLI and parses its JSON output.

Everything lives under pytest's tmp dirs; the only shared paths are the CLI's fixed ssh
ControlPath sockets (/tmp/maxkernel-ssh-%C), which are keyed by our sshd's private port and are
closed at the end of the session.
"""
import glob
import errno
import getpass
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from process_tree import descendants  # noqa: F401 (the tests import it from here)

ROOT = Path(__file__).resolve().parents[2]
WORKER_SRC = ROOT / "tpu" / "worker"
TASKS = ROOT / "tests" / "worker" / "tasks" / "infile"
SSHD = os.environ.get("MAXKERNEL_TEST_SSHD", "/usr/sbin/sshd")


def maxkernel_path():
    return os.environ.get("MAXKERNEL_CLI", str(ROOT / "build" / "bin" / "maxkernel"))


def venv_python():
    return os.environ.get("MAXKERNEL_PYTHON", str(ROOT / ".venv" / "bin" / "python"))


def wait_until(predicate, timeout, interval=0.05):
    """Polls `predicate` until it is truthy or `timeout` seconds pass; returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pids_with_cmdline(fragment):
    """PIDs of live processes whose command line contains `fragment` (skips zombies)."""
    out = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(
                "utf-8", "replace")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if fragment in cmdline and state != "Z":
            out.add(int(entry))
    return out


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str
    elapsed: float
    data: dict | None

    def describe(self):
        return (f"exit {self.returncode} after {self.elapsed:.1f}s\n--- stdout\n{self.stdout}"
                f"\n--- stderr\n{self.stderr[-4000:]}")


@pytest.fixture(scope="session")
def worker_copy(tmp_path_factory):
    """A private snapshot of tpu/worker: the bundle hash stays fixed while others edit the
    worker, and worker processes are recognisable by this path in their command line."""
    dst = tmp_path_factory.mktemp("worker") / "worker"
    dst.mkdir()
    for rel in worker_files(WORKER_SRC):  # the entry and the package below it
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(WORKER_SRC / rel, dst / rel)
    return dst


def worker_files(worker_dir: Path) -> list[str]:
    """The worker bundle's files as tpu/host/worker_bundle.cpp lists them: every .py under the
    directory by its '/'-separated relative path, sorted, caches (__pycache__, .*) left out."""
    out = []
    for f in worker_dir.rglob("*.py"):
        rel = f.relative_to(worker_dir)
        if not any(p == "__pycache__" or p.startswith(".") for p in rel.parts[:-1]):
            out.append(rel.as_posix())
    return sorted(out)


@pytest.fixture(scope="session")
def run_cli(worker_copy, tmp_path_factory):
    """Runs `maxkernel ARGS...` to completion (bounded by `timeout`), with a private worker copy,
    debug logs, and its cwd in a scratch dir. Parses stdout as JSON when `--format json`."""
    scratch = tmp_path_factory.mktemp("cli-cwd")

    def run(*args, timeout=120, worker_dir=None, cwd=None, env_extra=None):
        env = dict(os.environ)
        env.pop("MAXKERNEL_HOSTS_FILE", None)
        env["MAXKERNEL_WORKER_DIR"] = str(worker_dir or worker_copy)
        env["MAXKERNEL_LOG_LEVEL"] = "debug"
        env.update(env_extra or {})
        argv = [maxkernel_path(), *map(str, args)]
        # Others may be relinking the binary right now: retry only a failed exec, briefly.
        exec_deadline = time.monotonic() + 60
        while True:
            start = time.monotonic()
            try:
                proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                                      env=env, cwd=str(cwd or scratch), stdin=subprocess.DEVNULL)
                break
            except (PermissionError, FileNotFoundError):
                if time.monotonic() > exec_deadline:
                    raise
            except OSError as e:
                if e.errno != errno.ETXTBSY or time.monotonic() > exec_deadline:
                    raise
            time.sleep(0.5)
        elapsed = time.monotonic() - start
        data = None
        if "json" in args:
            try:
                data = json.loads(proc.stdout)
            except json.JSONDecodeError:
                data = None
        return CliResult(proc.returncode, proc.stdout, proc.stderr, elapsed, data)

    return run


def keygen(path):
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", path.name, "-f",
                    str(path)], check=True, timeout=30, stdin=subprocess.DEVNULL)
    return path


class Sshd:
    """A real OpenSSH server on 127.0.0.1:<free port>, authorising exactly `client_key`."""

    def __init__(self, directory: Path):
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.host_key = keygen(self.dir / "host_ed25519")
        self.client_key = keygen(self.dir / "client_ed25519")
        self.authorized_keys = self.dir / "authorized_keys"
        self.authorized_keys.write_text(
            (self.dir / "client_ed25519.pub").read_text())
        self.authorized_keys.chmod(0o600)
        self.user = getpass.getuser()
        self.log_path = self.dir / "sshd.log"
        self.proc = None
        self.port = None

    def start(self, attempts=3):
        try:
            Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # privilege separation dir
        except OSError as e:
            pytest.skip(f"cannot create /run/sshd for sshd: {e}")
        last = ""
        for _ in range(attempts):
            self.port = free_port()
            config = self.dir / "sshd_config"
            config.write_text("\n".join([
                f"Port {self.port}",
                f"ListenAddress 127.0.0.1:{self.port}",
                f"HostKey {self.host_key}",
                f"AuthorizedKeysFile {self.authorized_keys}",
                "PubkeyAuthentication yes",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "PermitRootLogin prohibit-password",
                "UsePAM no",
                "StrictModes no",
                f"PidFile {self.dir / 'sshd.pid'}",
                "LogLevel VERBOSE",
                "MaxStartups 100",
                "MaxSessions 100",
                "",
            ]))
            log = open(self.log_path, "ab")
            # Own session: teardown kills the listener and every per-connection child at once.
            self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)],
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                         start_new_session=True)
            log.close()
            if wait_until(lambda: self.proc.poll() is not None or self._banner(), 15):
                if self.proc.poll() is None:
                    return self
            last = self.log_path.read_text(errors="replace")
            self.stop()
        raise RuntimeError(f"sshd did not start:\n{last}")

    def _banner(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.settimeout(2)
                return s.recv(64).startswith(b"SSH-")
        except OSError:
            return False

    def host(self, name, remote_dir, identity=None, **extra):
        h = {
            "name": name,
            "kind": "ssh",
            "destination": self.destination,
            "port": self.port,
            "identityFile": str(identity or self.client_key),
            "sshOptions": ["StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null",
                           "LogLevel=ERROR", "IdentitiesOnly=yes"],
            "connectTimeoutSeconds": 5,
            "python": venv_python(),
            "remoteDir": str(remote_dir),
        }
        h.update(extra)
        return h

    @property
    def destination(self):
        return f"{self.user}@127.0.0.1"

    def close_master(self):
        """Ends the CLI's shared ssh connection (ControlPersist) to this server, if any."""
        # The CLI keys its sockets by credentials and %C: end only the ones whose %C is this
        # server's. `ssh -O exit` ends whatever master listens on the socket it is given, so
        # ending them all would cut another test's link mid-job (it did, under -n 2 in CI).
        probe = subprocess.run(["ssh", "-G", "-p", str(self.port), "-o", "ControlPath=%C",
                                self.destination], capture_output=True, text=True, timeout=15,
                               stdin=subprocess.DEVNULL)
        hashes = [line.split()[1] for line in probe.stdout.splitlines()
                  if line.startswith("controlpath ") and len(line.split()) == 2]
        assert len(hashes) == 1, f"ssh -G gave no ControlPath hash: {probe.stdout}{probe.stderr}"
        for sock in glob.glob(f"/tmp/maxkernel-ssh-*-{hashes[0]}"):
            subprocess.run(["ssh", "-o", f"ControlPath={sock}", "-p", str(self.port),
                            "-O", "exit", self.destination], capture_output=True, timeout=15,
                           stdin=subprocess.DEVNULL)


    def stop(self):
        if self.proc is None:
            return
        if self.port:
            self.close_master()
        # Per-connection children call setsid(), so the process group does not reach them:
        # collect the listener's whole process tree first.
        tree = descendants(self.proc.pid)
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        for pid in tree:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc = None


def _require_ssh_tools():
    missing = [t for t in ("ssh", "ssh-keygen", "tar") if shutil.which(t) is None]
    if not os.path.exists(SSHD):
        missing.append(SSHD + " (apt-get install -y openssh-server)")
    if missing:
        # Not a declared skip: in CI (tests/skip_policy.py) this fails, since scripts/setup.sh
        # installs openssh-server; only a developer's machine may lack it.
        pytest.skip("missing: " + ", ".join(missing) + " (scripts/setup.sh installs them)")


@pytest.fixture(scope="session")
def sshd(tmp_path_factory):
    _require_ssh_tools()
    server = Sshd(tmp_path_factory.mktemp("sshd"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def fresh_sshd(tmp_path):
    """A second server no one has logged in to yet (so no shared connection exists for it)."""
    _require_ssh_tools()
    server = Sshd(tmp_path / "sshd")
    server.start()
    yield server
    server.stop()


@pytest.fixture
def write_hosts(tmp_path):
    def write(*hosts, name="hosts.json"):
        path = tmp_path / name
        path.write_text(json.dumps(list(hosts), indent=2))
        return path
    return write


@pytest.fixture
def python_exe():
    exe = venv_python()
    if not os.access(exe, os.X_OK):
        pytest.skip(f"no python with JAX at {exe}")
    return exe


sys.path.insert(0, str(Path(__file__).parent))
