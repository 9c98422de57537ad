"""`maxkernel check --format sarif` is valid SARIF 2.1.0 (the official OASIS schema, fetched pinned
by scripts/setup.sh) and maps onto a repository the way GitHub code scanning reads it: URIs
relative to %SRCROOT% (the git root, or --sarif-root), percent-encoded; https help links; rule
help; an invocation. `--format github` writes workflow annotations."""
import json
import os
import shutil
import subprocess
from pathlib import Path
from urllib.parse import unquote, urlparse

import jsonschema

ROOT = Path(__file__).resolve().parents[2]
BAD = ROOT / "tests" / "corpus" / "bad" / "mk004_dimension_semantics_length.py"
SCHEMA = ROOT / "third_party" / "sarif-schema" / "sarif-schema-2.1.0.json"


def maxkernel():
    return os.environ.get("MAXKERNEL_CLI", str(ROOT / "build" / "bin" / "maxkernel"))


def run(*args, cwd=None):
    return subprocess.run([maxkernel(), *map(str, args)], capture_output=True, text=True, timeout=60, cwd=cwd,
                          check=False)


def schema_errors(log):
    assert SCHEMA.exists(), f"{SCHEMA} missing: run scripts/setup.sh"
    # With the formats checked: "uri" properties must be absolute URIs (rfc3986-validator).
    validator = jsonschema.Draft4Validator(json.loads(SCHEMA.read_text()),
                                           format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)
    assert not validator.format_checker.conforms("docs/diagnostics.md", "uri")
    return [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(log)]


def a_repository(tmp_path):
    """A git work tree with a kernel in a folder whose name needs percent-encoding."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)  # what marks a work tree's root
    folder = repo / "my kernels"
    folder.mkdir()
    shutil.copy(BAD, folder / "k#1.py")
    return repo, folder / "k#1.py"


def test_sarif_validates_against_the_official_schema_from_anywhere(tmp_path):
    repo, kernel = a_repository(tmp_path)
    # Run from a sub-folder of the repository with a relative path, and with the binary outside it.
    result = run("check", "--format", "sarif", "k#1.py", cwd=kernel.parent)
    assert result.returncode == 1, result.stderr
    log = json.loads(result.stdout)
    assert schema_errors(log) == []
    (run_,) = log["runs"]
    base = run_["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    assert urlparse(base).scheme == "file" and base.endswith("/")
    assert Path(unquote(urlparse(base).path)) == repo
    (res,) = run_["results"]
    where = res["locations"][0]["physicalLocation"]["artifactLocation"]
    assert where == {"uri": "my%20kernels/k%231.py", "uriBaseId": "%SRCROOT%"}
    assert res["ruleId"] == "MK004" and res["level"] == "error"


def test_rules_carry_https_help_and_descriptions():
    log = json.loads(run("check", "--format", "sarif", BAD).stdout)
    driver = log["runs"][0]["tool"]["driver"]
    assert driver["informationUri"].startswith("https://")
    ids = [r["id"] for r in driver["rules"]]
    assert ids == [f"MK00{i}" for i in range(9)]
    for rule in driver["rules"]:
        assert rule["helpUri"].startswith("https://") and rule["helpUri"].endswith("#" + rule["name"])
        assert rule["fullDescription"]["text"] and rule["help"]["text"]
        assert rule["helpUri"] in rule["help"]["markdown"]


def test_invocation_is_recorded():
    log = json.loads(run("check", "--format", "sarif", BAD).stdout)
    (inv,) = log["runs"][0]["invocations"]
    assert inv["executionSuccessful"] is True
    assert inv["commandLine"] == f"maxkernel check --format sarif {BAD}"
    assert inv["workingDirectory"]["uri"].startswith("file:///")
    failed = json.loads(run("check", "--format", "sarif", BAD, "/no/such.py").stdout)
    (inv,) = failed["runs"][0]["invocations"]
    assert inv["executionSuccessful"] is False
    assert "/no/such.py" in inv["toolExecutionNotifications"][0]["message"]["text"]
    assert schema_errors(failed) == []


def test_sarif_root_option_and_paths_outside_it(tmp_path):
    repo, kernel = a_repository(tmp_path)
    log = json.loads(run("check", "--format", "sarif", "--sarif-root", repo / "my kernels", kernel).stdout)
    where = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert where == {"uri": "k%231.py", "uriBaseId": "%SRCROOT%"}
    # A file outside the root: an absolute file URI, still valid.
    log = json.loads(run("check", "--format", "sarif", "--sarif-root", tmp_path / "elsewhere", kernel).stdout)
    where = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert where == {"uri": "file://" + str(repo).replace(" ", "%20") + "/my%20kernels/k%231.py"}
    assert schema_errors(log) == []


def test_github_annotations():
    result = run("check", "--format", "github", BAD)
    assert result.returncode == 1
    (line,) = result.stdout.splitlines()
    assert line.startswith(f"::error file={BAD},line=")
    assert ",title=maxkernel MK004::" in line and line.endswith("[MK004]")
