"""Fixtures for the ray host kind: a real Ray cluster on loopback (a head and a second node, each
started by `ray start --block` as our child, each with one fake TPU), the CLI, the driver's
journal, and a watch over every TCP connection while the cluster runs.

Run through tests/ray/run.sh: it puts pytest, the cluster, the drivers and maxkernel in a network
namespace with only loopback, so Ray cannot reach the machine's own interface address.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from process_tree import descendants

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = ROOT / ".venv" / "bin"
HEAD_IP, SECOND_IP = "127.0.0.1", "127.0.0.2"  # two loopback addresses: the nodes tell apart


def maxkernel():
    return os.environ.get("MAXKERNEL_CLI", str(ROOT / "build" / "bin" / "maxkernel"))


def python():
    return os.environ.get("MAXKERNEL_PYTHON", str(VENV_BIN / "python"))


def wait_until(predicate, timeout, interval=0.05):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session", autouse=True)
def loopback_only_namespace():
    # /proc/net is this process's namespace (/sys/class/net is the one sysfs was mounted in).
    with open("/proc/net/dev") as f:
        interfaces = sorted(line.split(":")[0].strip() for line in f.readlines()[2:])
    if interfaces != ["lo"]:
        pytest.fail(f"tests/ray must run in a network namespace with only loopback (interfaces "
                    f"here: {interfaces}); run tests/ray/run.sh", pytrace=False)
    if shutil.which("ray", path=str(VENV_BIN)) is None:
        pytest.fail("Ray is not in .venv (scripts/setup.sh installs scripts/requirements-ray.txt)",
                    pytrace=False)


class RayNode:
    """One `ray start --block`: the node lives exactly as long as that process tree."""

    def __init__(self, ip, temp_dir, log_path, *, head_port=None, join=None):
        args = [str(VENV_BIN / "ray"), "start", "--block", "--node-ip-address", ip,
                "--num-cpus", "2", "--resources", json.dumps({"TPU": 1}),
                "--disable-usage-stats"]
        if head_port:
            args += ["--head", "--port", str(head_port), "--include-dashboard=false",
                     "--temp-dir", temp_dir]
        else:
            args += ["--address", join]
        self.log_path = log_path
        self.log = open(log_path, "w")  # noqa: SIM115 (open while the node lives)
        env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True)
        started = wait_until(lambda: "Ray runtime started" in Path(log_path).read_text()
                             or self.proc.poll() is not None, 60, 0.1)
        assert started and self.proc.poll() is None, Path(log_path).read_text()[-3000:]

    def kill(self):
        """The node dies at once, as a machine does: every process of it, SIGKILL."""
        for pid in [self.proc.pid, *descendants(self.proc.pid)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait(10)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(40)
            except subprocess.TimeoutExpired:
                pass
        self.kill_leftovers()
        self.log.close()

    def kill_leftovers(self):
        if self.proc.poll() is None:
            self.kill()


@dataclass
class Cluster:
    address: str
    head: RayNode
    second: RayNode


def start_cluster(log_dir: Path):
    # Ray's unix sockets live under its temp dir, whose path must stay short.
    temp_dir = tempfile.mkdtemp(prefix="mkray", dir="/tmp")
    port = free_port()
    head = RayNode(HEAD_IP, temp_dir, log_dir / "head.log", head_port=port)
    second = RayNode(SECOND_IP, temp_dir, log_dir / "second.log", join=f"{HEAD_IP}:{port}")
    return Cluster(f"{HEAD_IP}:{port}", head, second), temp_dir


def stop_cluster(cluster, temp_dir):
    cluster.second.stop()
    cluster.head.stop()
    shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A head and a second node, shared by the tests that leave both alive."""
    c, temp_dir = start_cluster(tmp_path_factory.mktemp("cluster"))
    yield c
    stop_cluster(c, temp_dir)


@pytest.fixture
def fresh_cluster(tmp_path):
    """A cluster of its own, for a test that kills a node."""
    c, temp_dir = start_cluster(tmp_path)
    yield c
    stop_cluster(c, temp_dir)


class ConnectionWatch:
    """Samples /proc/net/tcp and tcp6 while it runs: every address any socket of this namespace
    used, so a test can show that nothing left 127.0.0.0/8."""

    def __init__(self):
        self.addresses = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    @staticmethod
    def _decode(hex_address):
        ip = hex_address.split(":")[0]
        if len(ip) == 8:
            return socket.inet_ntop(socket.AF_INET, bytes.fromhex(ip)[::-1])
        raw = b"".join(bytes.fromhex(ip[i:i + 8])[::-1] for i in range(0, 32, 8))
        return socket.inet_ntop(socket.AF_INET6, raw)

    def sample(self):
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            with open(table) as f:
                for line in f.readlines()[1:]:
                    fields = line.split()
                    for address in fields[1:3]:
                        self.addresses.add(self._decode(address))

    def _loop(self):
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(0.1)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.sample()

    def outside_loopback(self):
        def loopback(a):
            return a.startswith(("127.", "::ffff:127.")) or a in ("0.0.0.0", "::", "::1")
        return sorted(a for a in self.addresses if not loopback(a))


def read_journal(path: Path):
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
