"""`maxkernel optimize --store` on a store it cannot write: a read-only store file, a read-only
directory, a disk that fills up mid-run. Each gives a clear error naming the store and a
non-zero exit code, never a crash, and the database stays sound (PRAGMA integrity_check).
The read-only and full file systems are small tmpfs mounts (the tests run as root); where
mounting is not allowed, a full disk is simulated with RLIMIT_FSIZE and the read-only store is
an immutable file in an immutable directory (`chattr +i`: refused to root too, where file modes
are not). Only where neither is permitted is the read-only case skipped (declared)."""
import contextlib
import json
import os
import resource
import signal
import sqlite3
import subprocess

import pytest

from conftest import maxkernel, python, wait_until, worker_processes

MOUNT_FALLBACK = os.environ.get("MAXKERNEL_FAULTS_NO_MOUNT") == "1"  # to test the fallback


@contextlib.contextmanager
def tmpfs(path, size):
    path.mkdir()
    mounted = not MOUNT_FALLBACK and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
        capture_output=True).returncode == 0
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(path)], check=True)


def command(kernel, store, *extra):
    return [maxkernel(), "optimize", str(kernel), "--python", python(), "--store", str(store),
            "--format", "json", "--no-report", "--branches", "2", *extra]


def env_for(store):
    return dict(os.environ, MAXKERNEL_STORE=str(store))


def integrity(store):
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        return db.execute("PRAGMA integrity_check").fetchone()[0]


def chattr(flag, *paths):
    return subprocess.run(["chattr", flag, *map(str, paths)], check=False,
                          capture_output=True).returncode == 0


@contextlib.contextmanager
def read_only_store_dir(path):
    """A directory for a store that the test makes read-only once the store exists: a tmpfs
    remounted read-only, or (no mount allowed) the store file and the directory made immutable.
    Yields (make_read_only, make_writable, how)."""
    with tmpfs(path, "4m") as mounted:
        if mounted:
            yield (lambda: subprocess.run(["mount", "-o", "remount,ro", str(path)], check=True),
                   lambda: subprocess.run(["mount", "-o", "remount,rw", str(path)], check=True),
                   "a read-only tmpfs")
            return
        def files():
            return [*path.iterdir(), path]

        try:
            yield (lambda: chattr("+i", *files()) or pytest.skip(
                       "declared: neither mounting a tmpfs nor chattr +i is permitted here "
                       "(root ignores file modes)"),
                   lambda: chattr("-i", *files()),
                   "an immutable file and directory (chattr +i)")
        finally:
            chattr("-i", *files())


def test_a_read_only_store_file_and_directory_are_clear_errors(tmp_path, kernel):
    mnt = tmp_path / "ro"
    with read_only_store_dir(mnt) as (make_read_only, make_writable, how):
        store = mnt / "store.sqlite"
        r = subprocess.run(command(kernel, store, "--budget", "iterations=1"), check=False,
                           capture_output=True, text=True, timeout=600, env=env_for(store))
        assert r.returncode == 0, r.stderr
        run_id = json.loads(r.stdout)["run"]
        before = store.read_bytes()
        make_read_only()
        for target in (store, mnt / "new.sqlite"):  # an existing file; a file to be created
            r = subprocess.run(command(kernel, target), check=False, capture_output=True,
                               text=True, timeout=120, env=env_for(target))
            assert r.returncode == 2, (how, r.returncode, r.stderr)
            assert f"run store {target}" in r.stderr and "unable to open" in r.stderr, r.stderr
            assert r.stdout == ""
        assert not (mnt / "new.sqlite").exists()
        assert store.read_bytes() == before, "the read-only store was written"
        # Writable again (a WAL store cannot be opened at all on a read-only file system).
        make_writable()
        assert integrity(store) == "ok"
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
            assert db.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone() == ("done",)


def fill(directory):
    """Writes a file until the file system is full."""
    fd = os.open(directory / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 65536)
    except OSError:
        pass
    finally:
        try:
            os.close(fd)
        except OSError:
            pass


def limit_file_size(limit):
    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a signal
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_a_disk_that_fills_up_mid_run_stops_it_with_a_clear_error(tmp_path, kernel):
    mnt = tmp_path / "small"
    with tmpfs(mnt, "3m") as mounted:
        store = (mnt if mounted else tmp_path) / "store.sqlite"
        proc = subprocess.Popen(
            command(kernel, store, "--budget", "iterations=4", "--concurrency", "2"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env_for(store),
            preexec_fn=None if mounted else limit_file_size(160 * 1024))
        try:
            stderr = []
            for line in proc.stderr:
                stderr.append(line)
                if mounted and "| node 0 " in line:
                    fill(mnt)  # the baseline is recorded; every later write meets a full disk
                    break
            out, rest = proc.communicate(timeout=600)
            stderr = "".join(stderr) + rest
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        wait_until(lambda: not worker_processes(store), 60, "the workers to exit")
        assert proc.returncode == 1, stderr
        assert "terminate called" not in stderr
        # The failed write names the store (the run store, or the evaluation cache in it).
        assert f"run store {store}" in stderr or "evaluation cache" in stderr, stderr
        assert "disk is full" in stderr or "too large" in stderr.lower() or "I/O" in stderr, stderr
        assert integrity(store) == "ok"
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
            runs = db.execute("SELECT id, status FROM runs").fetchall()
        if runs:  # the run got far enough to be recorded: it stays resumable
            ((run_id, status),) = runs
            assert status == "running"
            assert f"maxkernel runs resume {run_id}" in stderr
