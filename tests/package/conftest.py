"""The package under test: scripts/package.sh run once per session on the build the other suites
use ($MAXKERNEL_BUILD, else build/), into a temporary folder (no tarball: the tests need the folder
and the wheel). Stripping and copying the libraries take seconds."""
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def build_dir():
    cli = os.environ.get("MAXKERNEL_CLI")
    return Path(os.environ.get("MAXKERNEL_BUILD", Path(cli).parents[1] if cli else ROOT / "build"))


@pytest.fixture(scope="session")
def package(tmp_path_factory):
    """(the packaged prefix, the wheel)"""
    out = tmp_path_factory.mktemp("package")
    r = subprocess.run([str(ROOT / "scripts" / "package.sh"), str(build_dir()), str(out)],
                       capture_output=True, text=True, timeout=300, check=False,
                       env={**os.environ, "MAXKERNEL_PACKAGE_TAR": "0"})
    assert r.returncode == 0, r.stdout + r.stderr
    (prefix,) = [p for p in out.iterdir() if p.is_dir()]
    (wheel,) = out.glob("*.whl")
    return prefix, wheel
