"""`maxkernel check` on the kernel corpus: no false errors on good kernels, exactly the expected
findings on bad ones, and each output format's shape."""
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"
GOOD = sorted((CORPUS / "good").glob("*.py"))
BAD = sorted((CORPUS / "bad").glob("*.py"))
EXPECT = re.compile(r"#\s*expect:\s*((?:MK\d{3}[ ,]*)+)")


def maxkernel():
    return os.environ.get("MAXKERNEL_CLI", str(ROOT / "build" / "bin" / "maxkernel"))


def check(*args):
    return subprocess.run([maxkernel(), "check", *map(str, args)], capture_output=True, text=True, timeout=60)


def expectations(path):
    out = set()
    for lineno, line in enumerate(path.read_text().splitlines(), start=1):
        m = EXPECT.search(line)
        if m:
            for code in re.findall(r"MK\d{3}", m.group(1)):
                out.add((lineno, code))
    return out


def test_corpus_is_big_enough():
    assert len(GOOD) >= 25 and len(BAD) >= 12


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.name)
def test_good_kernels_get_no_findings(path):
    result = check("--format", "json", path)
    assert result.returncode == 0, result.stdout + result.stderr
    data = json.loads(result.stdout)
    f = data["files"][0]
    assert f["kernels"], f"no pallas_call found in {path.name}"
    assert f["diagnostics"] == [], f["diagnostics"]


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_bad_kernels_get_exactly_the_expected_findings(path):
    result = check("--format", "json", path)
    data = json.loads(result.stdout)
    got = {(d["line"], d["code"]) for d in data["files"][0]["diagnostics"]}
    assert got == expectations(path)
    has_error = any(d["severity"] == "error" for d in data["files"][0]["diagnostics"])
    assert result.returncode == (1 if has_error else 0)


def test_text_format_lines():
    path = CORPUS / "bad" / "mk001_matmul_block_tiling.py"
    result = check(path)
    assert result.returncode == 1
    line = result.stdout.strip().splitlines()[0]
    assert re.fullmatch(rf"{re.escape(str(path))}:17:\d+: error: .+ \[MK001\]", line), line
    assert "1 error(s)" in result.stderr


def test_folder_is_searched_recursively():
    result = check("--format", "json", CORPUS)
    data = json.loads(result.stdout)
    assert len(data["files"]) == len(GOOD) + len(BAD) + 1  # + verify_corpus.py
    assert data["summary"]["kernels"] >= len(GOOD) + len(BAD)
    assert result.returncode == 1


def test_sarif_output():
    path = CORPUS / "bad" / "mk004_dimension_semantics_length.py"
    result = check("--format", "sarif", path)
    sarif = json.loads(result.stdout)
    assert sarif["version"] == "2.1.0"
    run = sarif["runs"][0]
    assert {r["id"] for r in run["tool"]["driver"]["rules"]} >= {f"MK00{i}" for i in range(1, 9)}
    (res,) = run["results"]
    assert res["ruleId"] == "MK004" and res["level"] == "error"
    region = res["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] == min(line for line, _ in expectations(path))
    assert region["startColumn"] >= 1


def test_target_changes_the_verdict():
    path = CORPUS / "good" / "tpu_matmul_large_tiles_vmem_limit.py"
    assert check("--target", "v5e", path).returncode == 0
    v4 = check("--target", "v4", "--format", "json", path)  # 16 MiB of physical VMEM
    diags = json.loads(v4.stdout)["files"][0]["diagnostics"]
    assert [(d["code"], d["severity"]) for d in diags] == [("MK007", "warning")]
    assert "vmem_limit_bytes is 48 MiB" in diags[0]["message"]
    assert v4.returncode == 0  # a warning is not an error


def test_usage_errors_exit_two():
    assert check("--target", "v99", CORPUS).returncode == 2
    assert check("--format", "xml", CORPUS).returncode == 2
    assert check("/no/such/path.py").returncode == 2
    assert check().returncode == 2
