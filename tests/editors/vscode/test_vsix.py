"""The .vsix is the linux-x64 one and carries its server: the manifest's TargetPlatform, the
stripped maxkernel-lsp with every library it loads but glibc's, the worker and the diagnostics page
where the server looks for them. Unpacked as VS Code does (no executable bits kept; the extension
sets it), the server loads nothing from outside the extension and answers initialize.
Run by tests/editors/vscode/run.sh after packaging, with MAXKERNEL_VSIX set."""
import os
import re
import subprocess
import zipfile
from pathlib import Path

import pytest
from lsp_client.connection import (
    Connection,  # tests/lsp_client, on sys.path through tests/conftest.py
)

ROOT = Path(__file__).resolve().parents[3]
VSIX = Path(os.environ.get("MAXKERNEL_VSIX", ROOT / "editors" / "vscode" / "dist" / "maxkernel.vsix"))
GLIBC = {"linux-vdso.so.1", "ld-linux-x86-64.so.2", "libc.so.6", "libm.so.6", "libpthread.so.0",
         "libdl.so.2", "librt.so.1", "libresolv.so.2", "libutil.so.1", "libnsl.so.1", "libanl.so.1"}


@pytest.mark.may_skip("collected outside run.sh before any .vsix was packaged")
def test_vsix_targets_linux_x64_and_carries_its_server(tmp_path):
    if "MAXKERNEL_VSIX" not in os.environ and not VSIX.exists():
        pytest.skip("declared: no .vsix packaged yet (tests/editors/vscode/run.sh makes and checks it)")
    with zipfile.ZipFile(VSIX) as vsix:
        names = set(vsix.namelist())
        manifest = vsix.read("extension.vsixmanifest").decode()
        vsix.extractall(tmp_path)
    assert re.search(r'<Identity [^>]*TargetPlatform="linux-x64"', manifest), manifest[:600]
    for needed in ("extension/bin/maxkernel-lsp", "extension/lib/maxkernel/libspdlog.so.1.10",
                   "extension/lib/maxkernel/libstdc++.so.6",
                   "extension/share/maxkernel/tpu/worker/maxkernel_worker.py",
                   "extension/share/maxkernel/tpu/worker/mkworker/judge/judge.py",  # subpackages too
                   "extension/share/maxkernel/docs/diagnostics.md"):
        assert needed in names, needed

    extension = (tmp_path / "extension").resolve()
    server = extension / "bin" / "maxkernel-lsp"
    server.chmod(0o755)
    sections = subprocess.run(["readelf", "-S", "-W", str(server)], capture_output=True, text=True, check=True).stdout
    assert ".debug_info" not in sections
    ldd = subprocess.run(["ldd", str(server)], capture_output=True, text=True, check=True).stdout
    assert "not found" not in ldd, ldd
    outside = [so for so, path in re.findall(r"^\s*(\S+)\s+=>\s+(\S+)\s+\(", ldd, re.MULTILINE)
               if so not in GLIBC and not os.path.realpath(path).startswith(str(extension) + "/")]
    assert outside == [], f"loaded from outside the extension: {outside}"

    env = {k: v for k, v in os.environ.items() if not k.startswith("MAXKERNEL_")}
    conn = Connection([str(server)], cwd=str(tmp_path), env=env, reader_thread=True)
    try:
        rid = conn.send_request("initialize", {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}})[0]
        assert conn.wait_response(rid, 30)["result"]["serverInfo"]["name"] == "maxkernel-lsp"
    finally:
        conn.kill()
