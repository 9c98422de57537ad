"""Writes a Python wheel of a packaged prefix (scripts/package.sh), as ruff ships its binary:
`pip install maxkernel-VER-py3-none-manylinux_2_N_x86_64.whl` puts `maxkernel` and `maxkernel-lsp`
on PATH (the wheel's .data/scripts, installed into the environment's bin/), the libraries they
load in PREFIX/lib/maxkernel and what they read at run time (the Python worker, the diagnostics
page, the settings schema) in PREFIX/share/maxkernel, where the programs look beside their bin/.
No Python runs when they start. A wheel is a zip with METADATA, WHEEL and RECORD; plain zipfile.

The platform tag is manylinux_2_N with N the newest glibc symbol version the programs and their
bundled libraries need (package_libs.py prints it): every other library is inside the wheel.

    python scripts/package_wheel.py PREFIX VERSION GLIBC_FLOOR OUT_DIR
"""
import base64
import hashlib
import sys
import zipfile
from pathlib import Path

SUMMARY = "Language server and CLI for Pallas TPU kernels: diagnostics, lowering, autotuning"


def record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def wheel_entries(prefix, data_dir):
    """(name in the wheel, bytes, executable) for every file of the prefix."""
    for path in sorted(p for p in prefix.rglob("*") if p.is_file()):
        rel = path.relative_to(prefix)
        if rel.parts[0] == "bin":
            name = f"{data_dir}/scripts/{rel.name}"
        else:  # lib/maxkernel, share/maxkernel: relative to the environment's prefix
            name = f"{data_dir}/data/{rel.as_posix()}"
        yield name, path.read_bytes(), bool(path.stat().st_mode & 0o111)


def write_wheel(prefix, version, glibc_floor, out_dir):
    tag = f"py3-none-manylinux_{glibc_floor.replace('.', '_')}_x86_64"
    dist_info, data_dir = f"maxkernel-{version}.dist-info", f"maxkernel-{version}.data"
    license_text = (prefix / "share" / "maxkernel" / "LICENSE").read_bytes()
    meta = {
        f"{dist_info}/METADATA": (
            # 2.1, not 2.4's License-Expression: older pips and twines read it without a warning.
            f"Metadata-Version: 2.1\nName: maxkernel\nVersion: {version}\nSummary: {SUMMARY}\n"
            "License: Apache-2.0\nRequires-Python: >=3.8\n").encode(),
        f"{dist_info}/WHEEL": (
            f"Wheel-Version: 1.0\nGenerator: maxkernel scripts/package_wheel.py\n"
            f"Root-Is-Purelib: false\nTag: {tag}\n").encode(),
        f"{dist_info}/LICENSE": license_text,
    }
    out = Path(out_dir) / f"maxkernel-{version}-{tag}.whl"
    records = []
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as whl:
        def add(name, data, executable):
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))  # reproducible
            info.external_attr = (0o100755 if executable else 0o100644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            whl.writestr(info, data)
            records.append(f"{name},{record_hash(data)},{len(data)}")

        for name, data, executable in wheel_entries(prefix, data_dir):
            add(name, data, executable)
        for name, data in meta.items():
            add(name, data, False)
        record = f"{dist_info}/RECORD"
        add(record, ("\n".join(records + [f"{record},,"]) + "\n").encode(), False)
    return out


def main():
    prefix, version, glibc_floor, out_dir = sys.argv[1:5]
    print(write_wheel(Path(prefix), version, glibc_floor, out_dir))


if __name__ == "__main__":
    main()
