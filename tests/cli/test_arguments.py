"""Every command reads its arguments the same way (cli/argument_reader): `--name value` and
`--name=value` mean the same, a missing or malformed value and an unknown option are usage errors
(exit 2) naming the option and followed by the command's usage, and --help prints the usage to
stdout with exit 0. Nothing here needs a host: every case stops before one is contacted."""
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KERNEL = ROOT / "examples" / "matmul_tiled.py"


def run(*args):
    cli = os.environ.get("MAXKERNEL_CLI", str(ROOT / "build" / "bin" / "maxkernel"))
    return subprocess.run([cli, *map(str, args)], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("args, message", [
    (["bench", "--jobs", "0", "suite"], "--jobs wants a positive integer, not '0'"),
    (["bench", "--jobs=two", "suite"], "--jobs wants a positive integer, not 'two'"),
    (["bench", "--timeout=0", "suite"], "--timeout wants a positive number, not '0'"),
    (["test", "--timeout", "-3", str(KERNEL)], "--timeout wants a positive number, not '-3'"),
    (["test", str(KERNEL), "--seeds"], "--seeds needs a value"),
    (["test", str(KERNEL), str(KERNEL)], "one FILE[::KERNEL] at a time"),
    (["optimize", str(KERNEL), "--frobnicate"], "unknown option --frobnicate"),
    (["optimize", str(KERNEL), "--no-cache=yes"], "--no-cache takes no value"),
    (["optimize", str(KERNEL), "--extra-shapes", "all"], "--extra-shapes is rules or none"),
    (["optimize", str(KERNEL), "--tester-shapes=-1"], "--tester-shapes wants 0 or a positive integer, not '-1'"),
    (["runs", "list", "--no-report=1"], "--no-report takes no value"),
    (["report", "r1", "r2"], "one RUN_ID at a time"),
    (["knowledge", "search", "x", "--limit", "0"], "--limit wants a positive integer, not '0'"),
    (["check", "--target"], "--target needs a value"),
    (["bench", "--optimize", "suite", "--host", "a,,b"], "empty host name"),
])
def test_usage_errors_exit_2_with_the_reason_and_the_usage(args, message):
    r = run(*args)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    first = r.stderr.splitlines()[0]
    assert first.startswith(f"maxkernel {args[0]}: "), r.stderr
    assert message in first, r.stderr
    assert "usage: maxkernel" in r.stderr
    assert r.stdout == ""


@pytest.mark.parametrize("form", [["--target", "v7"], ["--target=v7"]])
def test_an_option_value_after_equals_is_the_same_as_the_next_argument(form):
    r = run("check", *form, "--format=json", KERNEL)
    assert r.returncode == 0, r.stderr
    assert '"target": "v7"' in r.stdout


@pytest.mark.parametrize("command", ["bench", "optimize", "test", "report", "check", "knowledge"])
def test_help_prints_the_usage_to_stdout(command):
    r = run(command, "--help")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: maxkernel"), r.stdout
