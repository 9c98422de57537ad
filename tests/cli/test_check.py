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
EXPERT = sorted((CORPUS / "expert").glob("*.py"))  # kernels in the style of expert code
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
    assert len(data["files"]) == len(GOOD) + len(BAD) + len(EXPERT) + 1  # + verify_corpus.py
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


WRAPPER_MODULE = '''from jax.experimental import pallas as pl


def pallas_call(kernel, *args, **kwargs):
    return pl.pallas_call(kernel, *args, **kwargs)
'''

WRAPPED_KERNEL = '''import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

{imports}


def copy_kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def copy():
    x = jnp.zeros((1024, 1024), jnp.float32)
    return {callee}(
        copy_kernel,
        out_shape=jax.ShapeDtypeStruct((1024, 1024), jnp.float32),
        grid=(8,),
        in_specs=[pl.BlockSpec((100, 1024), lambda i: (i, 0))],  # expect: MK001
        out_specs=pl.BlockSpec((128, 1024), lambda i: (i, 0)),
    )(x)
'''


@pytest.mark.parametrize(
    "imports,callee",
    [("from pkg import block", "block.pallas_call"),
     ("import pkg.block as block", "block.pallas_call"),
     ("from pkg.block import pallas_call as pc", "pc"),
     ("import pkg.block", "pkg.block.pallas_call")],
    ids=["from-import", "import-as", "function-alias", "plain-import"])
def test_kernel_behind_a_wrapper_in_another_file_of_the_project(tmp_path, imports, callee):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'wrapped'\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "block.py").write_text(WRAPPER_MODULE)
    # The kernel file sits in a sub-folder: `pkg` is found from the project root.
    (tmp_path / "kernels").mkdir()
    path = tmp_path / "kernels" / "copy.py"
    path.write_text(WRAPPED_KERNEL.format(imports=imports, callee=callee))
    result = subprocess.run([maxkernel(), "check", "--format", "json", str(path)], capture_output=True,
                            text=True, timeout=60, cwd="/")
    data = json.loads(result.stdout)
    f = data["files"][0]
    assert len(f["kernels"]) == 1, f
    assert {(d["line"], d["code"]) for d in f["diagnostics"]} == expectations(path), f["diagnostics"]
    assert result.returncode == 1

    # A module of the project whose own pallas_call forwards nothing: not a kernel site.
    (tmp_path / "pkg" / "block.py").write_text("def pallas_call(kernel, *args, **kwargs):\n    return kernel\n")
    data = json.loads(check("--format", "json", path).stdout)
    assert data["files"][0]["kernels"] == []

    # Without the module (a library outside the project that re-exports pallas_call): still a
    # kernel site, checked from the call's own arguments.
    (tmp_path / "pkg" / "block.py").unlink()
    (tmp_path / "pkg" / "__init__.py").unlink()
    data = json.loads(check("--format", "json", path).stdout)
    f = data["files"][0]
    assert len(f["kernels"]) == 1, f
    assert {(d["line"], d["code"]) for d in f["diagnostics"]} == expectations(path), f["diagnostics"]
