"""The layering check (scripts/check_layers.py) passes on the tree and fails on each kind of
violation it exists to catch."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "scripts" / "check_layers.py"


def run(root):
    return subprocess.run([sys.executable, str(CHECK), str(root)], capture_output=True, text=True,
                          timeout=60)


def tree(tmp_path, files):
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


BASE = {
    "source/pallas/model.h": '#include "source/syntax/tree.h"\n',
    "source/syntax/tree.h": "#pragma once\n",
    "lsp/server/server.cpp": '#include "source/pallas/model.h"\n#include <nlohmann/json.hpp>\n',
    "lsp/protocol/rpc.h": "#include <nlohmann/json.hpp>\n",
    "knowledge/store.cpp": "#include <nlohmann/json.hpp>\n",
    "agents/orchestration/search.cpp": '#include "tpu/jobs/jobs.h"\n',
    "tpu/jobs/jobs.h": '#include "knowledge/store.h"\n',
    "knowledge/store.h": "#pragma once\n",
}


def test_the_tree_keeps_its_layers():
    r = run(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 violation(s)" in r.stdout


def test_a_clean_tree_passes(tmp_path):
    r = run(tree(tmp_path, BASE))
    assert r.returncode == 0, r.stdout


def test_an_engine_that_includes_the_server_fails(tmp_path):
    r = run(tree(tmp_path, {**BASE, "source/pallas/model.h": '#include "lsp/server/server.h"\n'}))
    assert r.returncode == 1
    assert "source/pallas/model.h:1: includes lsp/server/server.h: only lsp/ knows LSP" in r.stdout


def test_a_layer_that_reaches_up_fails(tmp_path):
    r = run(tree(tmp_path, {**BASE, "tpu/jobs/jobs.h": '#include "agents/orchestration/search.h"\n'}))
    assert r.returncode == 1
    assert "tpu/jobs may not use agents/orchestration" in r.stdout


def test_json_in_the_engine_or_a_knowledge_header_fails(tmp_path):
    r = run(tree(tmp_path, {**BASE, "source/syntax/tree.h": "#include <nlohmann/json.hpp>\n",
                            "knowledge/store.h": "#include <nlohmann/json_fwd.hpp>\n"}))
    assert r.returncode == 1
    assert "source/syntax/tree.h:1: includes <nlohmann/json.hpp>" in r.stdout
    assert "knowledge/store.h:1: includes <nlohmann/json_fwd.hpp>" in r.stdout


def test_a_folder_without_a_row_fails(tmp_path):
    r = run(tree(tmp_path, {**BASE, "gadgets/thing.cpp": "int x;\n"}))
    assert r.returncode == 1
    assert "gadgets/thing.cpp: no row of the layering table covers this folder" in r.stdout


def test_the_service_layer_never_includes_lsp_or_the_cli(tmp_path):
    r = run(tree(tmp_path, {**BASE,
                            "service/checks.h": '#include "lsp/server/lsp_convert.h"\n',
                            "service/checks.cpp": '#include "lsp/protocol/json_rpc.h"\n#include "cli/run_output.h"\n',
                            "cli/run_output.h": "#pragma once\n"}))
    assert r.returncode == 1
    assert "service/checks.h:1: includes lsp/server/lsp_convert.h: only lsp/ knows LSP" in r.stdout
    assert "service/checks.cpp:1: includes lsp/protocol/json_rpc.h: only lsp/ knows LSP" in r.stdout
    assert "service/checks.cpp:2: includes cli/run_output.h: service may not use cli" in r.stdout


def test_the_server_never_opens_a_store_or_builds_a_host_pool(tmp_path):
    r = run(tree(tmp_path, {**BASE,
                            "lsp/server/runs.h": '#include "service/workspace.h"\n'
                                                 '#include "tpu/host/host_pool.h"\n',
                            "lsp/server/runs.cpp": '#include "agents/orchestration/run_store.h"\n'
                                                   "void f() {\n"
                                                   "  auto s = std::make_unique<knowledge::Store>(p);\n"
                                                   "  auto h = service::open_hosts(choice, true, e);\n"
                                                   "}\n",
                            "service/workspace.h": '#include "tpu/host/host_pool.h"\n',
                            "service/workspace.cpp": "auto s = std::make_unique<knowledge::Store>(p);\n",
                            "tpu/host/host_pool.h": "#pragma once\n",
                            "agents/orchestration/run_store.h": "#pragma once\n"}))
    assert r.returncode == 1
    assert ("lsp/server/runs.h:2: includes tpu/host/host_pool.h: the server reaches stores and "
            "host pools only through service/workspace.h") in r.stdout
    assert "lsp/server/runs.cpp:1: includes agents/orchestration/run_store.h" in r.stdout
    assert "lsp/server/runs.cpp:3: make_unique<knowledge::Store>: the server opens no store" in r.stdout
    assert "lsp/server/runs.cpp:4: open_hosts(: the server opens no store" in r.stdout
    assert "\nservice/workspace" not in r.stdout  # the service layer is where they belong
    assert "lsp/server/runs.h:1" not in r.stdout  # the workspace header is the way in
    assert "layering: 4 violation(s)" in r.stdout
