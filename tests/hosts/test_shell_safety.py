"""Shell metacharacters in host names, the python setting, the kernel file's name and the remote
directory never reach a shell unquoted, end to end through the `maxkernel` CLI: the run
succeeds and no marker file appears anywhere a stray `touch` could have put it.

(The quoting itself, run through a real `sh -c`, is tests/hosts/shell_safety_test.cpp.)
"""
import shutil
import uuid
from pathlib import Path

import pytest

from conftest import TASKS

SCALE_ADD = TASKS / "scale_add.py"


def nasty(token):
    return f"it's \"x\" $(touch {token}) `touch {token}`; touch {token} & *?[ab] ~"


def planted(token, scratch, *places):
    """Marker files: directly in `places`, or anywhere under `scratch` (our own dirs)."""
    found = [str(p / token) for p in places if (p / token).exists()]
    return found + [str(f) for f in scratch.rglob(f"{token}*")]


@pytest.mark.parametrize("kind", ["local", "command"])
def test_metacharacters_in_host_name_python_and_kernel_file(kind, run_cli, write_hosts,
                                                            tmp_path, python_exe):
    token = f"PWNED_{uuid.uuid4().hex[:10]}"
    # The python setting: the venv with JAX, reached through a directory no shell may touch
    # (the venv itself is linked, so python still finds its pyvenv.cfg).
    venv = Path(python_exe).parents[1]
    py_dir = tmp_path / f"py {nasty(token)}"
    py_dir.mkdir()
    (py_dir / "venv").symlink_to(venv, target_is_directory=True)
    python = py_dir / "venv" / "bin" / Path(python_exe).name
    task = tmp_path / (nasty(token).replace("/", "_") + ".py")
    shutil.copy(SCALE_ADD, task)
    name = f"vm {nasty(token)}"
    host = {"name": name, "kind": kind, "python": str(python)}
    if kind == "command":
        host["command"] = ["sh", "-c", "{command}"]
        host["remoteDir"] = str(tmp_path / f"remote {nasty(token)}")
    hosts = write_hosts(host)
    cwd = tmp_path / "cwd"
    cwd.mkdir()

    r = run_cli("lower", task, "--host", name, "--hosts", hosts, "--format", "json", cwd=cwd,
                timeout=120)
    assert r.returncode == 0, r.describe()
    assert r.data["status"] == "ok" and r.data["host"] == name, r.describe()
    assert r.data["file"] == str(task)
    assert r.data["result"]["lowered"] is True, r.describe()
    found = planted(token, tmp_path, cwd, Path.home(), Path("/tmp"), Path("/"))
    assert found == [], f"a shell ran part of a name: {found}"
