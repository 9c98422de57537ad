"""The packaged programs run on Linux systems other than the one that built them: every library
they load, except glibc's own, resolves inside the package (lib/maxkernel, through RUNPATH), so no
Debian 12 library (libboost_*.so.1.74.0, libspdlog, libfmt, curl's TLS stack, libstdc++) is taken
from /usr/lib; and they are stripped."""
import os
import re
import subprocess

# What every glibc-based system provides and the package must not carry (they go with its loader).
GLIBC = {"linux-vdso.so.1", "ld-linux-x86-64.so.2", "libc.so.6", "libm.so.6", "libpthread.so.0",
         "libdl.so.2", "librt.so.1", "libresolv.so.2", "libutil.so.1", "libnsl.so.1", "libanl.so.1"}


def resolved(program):
    out = subprocess.run(["ldd", str(program)], capture_output=True, text=True, check=True, timeout=30).stdout
    assert "not found" not in out, out
    return {so: os.path.realpath(path) for so, path in re.findall(r"^\s*(\S+)\s+=>\s+(\S+)\s+\(", out, re.MULTILINE)}


def test_every_library_but_glibc_resolves_inside_the_package(package):
    prefix, _ = package
    prefix = prefix.resolve()
    for name in ("maxkernel", "maxkernel-lsp"):
        libs = resolved(prefix / "bin" / name)
        assert "libspdlog.so.1.10" in libs and "libstdc++.so.6" in libs, libs  # the ones that matter
        outside = {so: path for so, path in libs.items()
                   if not path.startswith(str(prefix / "lib" / "maxkernel") + "/") and so not in GLIBC}
        assert outside == {}, f"{name} loads these from outside the package: {outside}"
        carried = {so for so, path in libs.items() if path.startswith(str(prefix))}
        assert not carried & GLIBC, f"{name}: glibc's own libraries must come from the system"


def test_programs_are_stripped_and_look_beside_themselves(package):
    prefix, _ = package
    for name in ("maxkernel", "maxkernel-lsp"):
        program = prefix / "bin" / name
        sections = subprocess.run(["readelf", "-S", "-W", str(program)], capture_output=True, text=True,
                                  check=True).stdout
        assert ".debug_info" not in sections and ".symtab" not in sections
        dynamic = subprocess.run(["readelf", "-d", str(program)], capture_output=True, text=True,
                                 check=True).stdout
        assert "(RUNPATH)" in dynamic and "[$ORIGIN/../lib/maxkernel]" in dynamic, dynamic
