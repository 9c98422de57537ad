"""The packaged programs run on a system that lacks Debian 12's libraries: in a private mount
namespace every system copy of a library the package bundles (Boost, spdlog, fmt, curl and its TLS
stack, sqlite, libstdc++...) is replaced by an empty file, as on a Linux system that never had
them. The build's own binary fails to start there (the check that the hiding works); the packaged
`maxkernel check` and `maxkernel-lsp --version` run. Needs `unshare -m` (root, as in CI)."""
import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SYSTEM_LIBS = Path("/usr/lib/x86_64-linux-gnu")


def in_namespace_without(libraries, command):
    """Runs `command` (argv) where each system copy of `libraries` (sonames) reads as empty."""
    hide = [os.path.realpath(SYSTEM_LIBS / so) for so in libraries if (SYSTEM_LIBS / so).exists()]
    script = "".join(f"mount --bind /dev/null {shlex.quote(p)} && " for p in sorted(set(hide)))
    script += "exec " + shlex.join(command)
    return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                          capture_output=True, text=True, timeout=60, check=False), hide


@pytest.mark.may_skip("a machine where unshare -m is refused (not root, no user namespaces)")
def test_packaged_programs_run_without_the_systems_libraries(package, tmp_path):
    if shutil.which("unshare") is None or subprocess.run(
            ["unshare", "-m", "--propagation", "private", "true"], capture_output=True, check=False).returncode != 0:
        pytest.skip("declared: unshare -m is refused on this machine")
    prefix, _ = package
    bundled = sorted(p.name for p in (prefix / "lib" / "maxkernel").iterdir())
    build = Path(os.environ.get("MAXKERNEL_BUILD", ROOT / "build"))

    control, hidden = in_namespace_without(bundled, [str(build / "bin" / "maxkernel"), "--version"])
    assert any("libspdlog" in p for p in hidden) and any("libstdc++" in p for p in hidden), hidden
    assert control.returncode != 0 and "error while loading shared libraries" in control.stderr, control

    shutil.copy(ROOT / "examples" / "tiled_matmul_task.py", tmp_path / "kernel.py")
    check, _ = in_namespace_without(bundled, [str(prefix / "bin" / "maxkernel"), "check", "--format", "json",
                                              str(tmp_path / "kernel.py")])
    assert check.returncode == 0, check.stderr
    assert json.loads(check.stdout)["summary"]["kernels"] >= 1
    version, _ = in_namespace_without(bundled, [str(prefix / "bin" / "maxkernel-lsp"), "--version"])
    assert version.returncode == 0 and "maxkernel" in version.stdout + version.stderr, version
