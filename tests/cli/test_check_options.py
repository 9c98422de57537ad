"""`maxkernel check` as a linter people already know (ruff, flake8) behaves: a syntax error is an
error with its location, a path with no Python files warns, `-` reads stdin, `--select/--ignore`,
`# maxkernel: ignore[MK001]` on the line, settings from `[tool.maxkernel]` in pyproject.toml,
usage errors on stderr, NO_COLOR, `-q/-v`, and every error names the path it is about."""
import json
import os
import pty
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BAD = ROOT / "tests" / "corpus" / "bad" / "mk001_matmul_block_tiling.py"
MK004 = ROOT / "tests" / "corpus" / "bad" / "mk004_dimension_semantics_length.py"


def maxkernel():
    return os.environ.get("MAXKERNEL_CLI", str(ROOT / "build" / "bin" / "maxkernel"))


def run(*args, stdin=None, cwd=None, env=None):
    return subprocess.run([maxkernel(), *map(str, args)], capture_output=True, text=True, timeout=60, check=False,
                          input=stdin, cwd=cwd, env=env)


def findings(result):
    return [(d["line"], d["code"]) for f in json.loads(result.stdout)["files"] for d in f["diagnostics"]]


def test_a_syntax_error_is_an_error_with_its_line(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("import jax\n\n\ndef f(x:\n    return x\n")
    r = run("check", path)
    assert r.returncode == 1, (r.stdout, r.stderr)
    first = r.stdout.splitlines()[0]
    assert first.startswith(f"{path}:4:"), first
    assert "error: syntax error" in first and "[MK000]" in first
    j = run("check", "--format", "json", path)
    assert j.returncode == 1
    (d,) = json.loads(j.stdout)["files"][0]["diagnostics"]
    assert (d["code"], d["severity"], d["line"], d["kernel"]) == ("MK000", "error", 4, None)


def test_a_folder_without_python_files_warns(tmp_path):
    (tmp_path / "notes.txt").write_text("nothing to check")
    r = run("check", tmp_path)
    assert r.returncode == 0
    assert f"warning: no Python files found under {tmp_path}" in r.stderr


def test_stdin_is_read_for_a_dash_and_named_by_stdin_filename():
    r = run("check", "-", stdin=BAD.read_text())
    assert r.returncode == 1, r.stderr
    assert r.stdout.startswith("-:17:"), r.stdout
    r = run("check", "--stdin-filename", "kernels/mm.py", "-", stdin=BAD.read_text())
    assert r.stdout.startswith("kernels/mm.py:17:"), r.stdout


def test_select_and_ignore_choose_the_codes():
    assert findings(run("check", "--format", "json", BAD)) == [(17, "MK001")]
    r = run("check", "--format", "json", "--ignore", "MK001", BAD)
    assert findings(r) == [] and r.returncode == 0
    assert findings(run("check", "--format", "json", "--select", "MK004,MK005", BAD)) == []
    assert findings(run("check", "--format", "json", "--select", "MK00", BAD)) == [(17, "MK001")]
    bad_code = run("check", "--select", "MK01x", BAD)
    assert bad_code.returncode == 2 and "unknown code 'MK01x'" in bad_code.stderr


def test_an_inline_comment_ignores_a_code_on_its_line(tmp_path):
    lines = BAD.read_text().splitlines()
    path = tmp_path / "k.py"
    lines[16] += "  # maxkernel: ignore[MK001]"
    path.write_text("\n".join(lines) + "\n")
    assert findings(run("check", "--format", "json", path)) == []
    lines[16] = lines[16].replace("ignore[MK001]", "ignore[MK004]")
    path.write_text("\n".join(lines) + "\n")
    assert findings(run("check", "--format", "json", path)) == [(17, "MK001")]
    lines[16] = lines[16].replace("ignore[MK004]", "ignore")
    path.write_text("\n".join(lines) + "\n")
    assert findings(run("check", "--format", "json", path)) == []


def test_settings_come_from_tool_maxkernel_in_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.maxkernel]\ntarget = "v4"\nignore = ["MK001"]\n\n[tool.other]\ntarget = "v6e"\n')
    (tmp_path / "src").mkdir()
    path = tmp_path / "src" / "k.py"
    path.write_text(BAD.read_text())
    r = run("check", "--format", "json", path)
    assert json.loads(r.stdout)["target"] == "v4" and findings(r) == [], r.stderr
    # The command line wins over the file.
    r = run("check", "--format", "json", "--target", "v5e", "--select", "MK001", path)
    assert json.loads(r.stdout)["target"] == "v5e" and findings(r) == [(17, "MK001")]
    (tmp_path / "pyproject.toml").write_text('[tool.maxkernel]\ntraget = "v4"\n')
    r = run("check", path)
    assert r.returncode == 2 and str(tmp_path / "pyproject.toml") in r.stderr and "traget" in r.stderr


def test_usage_goes_to_stderr():
    r = run()
    assert r.returncode == 2 and r.stdout == "" and "usage: maxkernel" in r.stderr
    r = run("check")
    assert r.returncode == 2 and r.stdout == "" and "usage: maxkernel check" in r.stderr


def test_quiet_and_verbose():
    quiet = run("check", "-q", BAD)
    assert quiet.returncode == 1 and quiet.stderr == "" and "[MK001]" in quiet.stdout
    verbose = run("check", "-v", BAD)
    assert f"checking {BAD}" in verbose.stderr and "1 error(s)" in verbose.stderr


def test_no_color_leaves_escape_codes_out_of_logs(tmp_path):
    # A log line printed to a colour terminal is coloured; NO_COLOR turns that off.
    env = dict(os.environ, NO_COLOR="1", TERM="xterm-256color")
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(maxkernel(), [maxkernel(), "check", "-v", str(BAD)], env)
    out = b""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.waitpid(pid, 0)
    assert b"checking" in out
    assert b"\x1b[" not in out, out


def test_errors_name_the_path_they_are_about(tmp_path):
    missing = tmp_path / "no-such-python"
    r = run("test", "--python", missing, ROOT / "examples" / "tiled_matmul_task.py")
    assert r.returncode == 3, (r.stdout, r.stderr)
    assert str(missing) in r.stdout + r.stderr, (r.stdout, r.stderr)
