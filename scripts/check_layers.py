#!/usr/bin/env python3
"""The layering table of ARCHITECTURE.md as a check: every C++ file of a layer may include only
the project folders its row allows, the source engine never sees JSON, knowledge keeps nlohmann
inside its .cpp files, and nothing outside lsp/ (tests aside; service/ and cli/ included) includes
lsp/. The server owns no store and no host pool: lsp/server reaches the store file and the hosts
only through service/workspace.h (no store or pool header of its own, no connection or pool made
there). A product folder with no row fails too, so a new folder cannot slip past the table.

Usage: scripts/check_layers.py [ROOT]   (exit 1 and one line per violation)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

# layer folder -> project folders its files may include (besides its own). Longest prefix wins.
ALLOWED: dict[str, set[str]] = {
    "source/text": set(),
    "source/syntax": {"source/text"},
    "source/pallas": {"source/text", "source/syntax"},
    "source/analysis": {"source/text", "source/syntax", "source/pallas", "knowledge"},
    "knowledge": set(),
    "lsp/protocol": set(),
    "tpu/host": {"knowledge"},
    "tpu/jobs": {"knowledge", "tpu/host"},
    "agents/llm": set(),
    "agents/prompts": set(),
    "agents/tuning": {"source/text", "source/syntax", "source/pallas", "agents/llm"},
    "agents/rewrites": {"source/text", "source/syntax", "source/pallas", "agents/tuning"},
    "agents/subagents": {"source", "agents/llm", "agents/prompts", "agents/tuning"},
    "agents/orchestration": {"source", "knowledge", "tpu", "agents"},
    "agents/report": {"knowledge", "agents", "tpu/jobs"},  # tpu/jobs: the typed worker replies
    "service": {"source", "knowledge", "tpu", "agents"},
    "cli": {"source", "knowledge", "tpu", "agents", "service"},
    "lsp/server": {"source", "knowledge", "tpu", "agents", "service", "lsp/protocol"},
}
# Folders that hold no C++ of the product's layers.
NOT_LAYERS = {"tests", "bench", "third_party", "editors", "docs", "examples", "scripts", "build"}
NO_JSON_ANYWHERE = ("source/",)        # the engine's plain structs
NO_JSON_IN_HEADERS = ("knowledge/",)   # nlohmann stays inside knowledge's .cpp files

# The server's state lives in service::Workspace: what opens the store file or builds host pools.
SERVER = "lsp/server/"
OWNING_HEADERS = {
    "knowledge/store.h", "knowledge/store_database.h", "agents/orchestration/run_store.h",
    "agents/orchestration/session_store.h", "tpu/host/host_pool.h", "tpu/host/kernel_host.h",
}
OWNING_CALLS = re.compile(
    r"\bopen_hosts\s*\(|\bsqlite3_open|make_(?:unique|shared)\s*<\s*(?:mk::)?(?:knowledge::Store|"
    r"agents::RunStore|agents::SessionStore|tpu::HostPool|tpu::KernelHost|(?:knowledge::)?sql::Database)\s*>")

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)


def layer_of(rel: str) -> str | None:
    best = None
    for layer in ALLOWED:
        if (rel == layer or rel.startswith(layer + "/")) and (best is None or len(layer) > len(best)):
            best = layer
    return best


def project_folder(include: str, root: Path) -> str | None:
    """The project folder an include names ("source/pallas"), or None for a system header."""
    parts = include.split("/")
    if len(parts) < 2 or not (root / parts[0]).is_dir() or parts[0] in NOT_LAYERS:
        return None
    return "/".join(parts[:2]) if (root / parts[0] / parts[1]).is_dir() else parts[0]


def allowed(own: str, target: str) -> bool:
    if target == own or target.startswith(own + "/") or own.startswith(target + "/"):
        return True
    return any(target == a or target.startswith(a + "/") for a in ALLOWED[own])


def check(root: Path) -> list[str]:
    problems = []
    files = [p for top in sorted(root.iterdir())
             if top.is_dir() and not top.name.startswith(".") for p in sorted(top.rglob("*"))]
    for path in files:
        if path.suffix not in (".h", ".cpp", ".cc") or not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        top = rel.split("/")[0]
        if top in NOT_LAYERS or top.startswith("build") or "/" not in rel:
            continue
        layer = layer_of(rel)
        if layer is None:
            problems.append(f"{rel}: no row of the layering table covers this folder")
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in INCLUDE.finditer(text):
            inc = m.group(1)
            line = text.count("\n", 0, m.start()) + 1
            if inc.startswith("nlohmann"):
                if rel.startswith(NO_JSON_ANYWHERE) or (rel.startswith(NO_JSON_IN_HEADERS)
                                                        and path.suffix == ".h"):
                    problems.append(f"{rel}:{line}: includes <{inc}>: {layer} must not know JSON")
                continue
            if rel.startswith(SERVER) and inc in OWNING_HEADERS:
                problems.append(f"{rel}:{line}: includes {inc}: the server reaches stores and "
                                "host pools only through service/workspace.h")
                continue
            target = project_folder(inc, root)
            if target is None:
                continue
            if target.startswith("lsp") and not layer.startswith("lsp/"):
                problems.append(f"{rel}:{line}: includes {inc}: only lsp/ knows LSP")
            elif not allowed(layer, target):
                problems.append(f"{rel}:{line}: includes {inc}: {layer} may not use {target}")
        if rel.startswith(SERVER):
            for m in OWNING_CALLS.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                problems.append(f"{rel}:{line}: {m.group(0).strip()}: the server opens no store "
                                "and builds no host pool; service::Workspace does")
        if rel.startswith(NO_JSON_ANYWHERE) and "nlohmann::" in text:
            problems.append(f"{rel}: names an nlohmann type: the source engine has no JSON")
    return problems


def main(argv: list[str]) -> int:
    root = Path(argv[1]).resolve() if len(argv) > 1 else Path(__file__).resolve().parents[1]
    problems = check(root)
    for p in problems:
        print(p)
    print(f"layering: {len(problems)} violation(s) in {root}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
