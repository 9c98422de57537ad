"""The worker package's import structure, read from its source with `ast` (nothing imported):
no import cycle between its modules, function-level imports included, and no module reaching
for another module's private (`_name`) names."""

from __future__ import annotations

import ast
import pathlib

WORKER = pathlib.Path(__file__).resolve().parents[2] / "tpu" / "worker"
PACKAGE = "mkworker"


def _modules(root: pathlib.Path) -> dict[str, pathlib.Path]:
    """Dotted module name -> file, for the package (a package is its __init__)."""
    out = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(tree: ast.AST, name: str, is_package: bool, modules) -> list[tuple[str, str | None]]:
    """(module imported, name taken from it or None) for every import anywhere in the tree."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base if is_package else base[:-1]
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            for a in node.names:
                sub = f"{mod}.{a.name}"
                # `from pkg import module` imports the module; `from module import name` a name.
                found.append((sub, None) if sub in modules else (mod, a.name))
    return [(m, n) for m, n in found if m == PACKAGE or m.startswith(PACKAGE + ".")]


def import_graph(root: pathlib.Path = WORKER) -> dict[str, set[str]]:
    modules = _modules(root)
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        deps = set()
        for mod, _ in _imports(tree, name, path.name == "__init__.py", modules):
            # Importing a.b.c runs a/__init__ and a/b/__init__ first: only the module named
            # counts here (the package inits of this worker import nothing).
            if mod in modules and mod != name:
                deps.add(mod)
        graph[name] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def private_reaches(root: pathlib.Path = WORKER) -> list[str]:
    """`module: other._name` for each use of another module's private name: `from other import
    _name`, or `alias._name` where alias is a module this file imported."""
    modules = _modules(root)
    bad = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in modules:
                        aliases[a.asname or a.name] = a.name
            elif isinstance(node, ast.ImportFrom):
                for a in node.names:
                    mod = f"{node.module}.{a.name}" if node.module else a.name
                    if mod in modules:
                        aliases[a.asname or a.name] = mod
                    elif node.module in modules and _private(a.name):
                        bad.append(f"{name}: from {node.module} import {a.name}")
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases and _private(node.attr)
                    and aliases[node.value.id] != name):
                bad.append(f"{name}:{node.lineno}: {aliases[node.value.id]}.{node.attr}")
    return bad


def _private(attr: str) -> bool:
    return attr.startswith("_") and not (attr.startswith("__") and attr.endswith("__"))


def test_the_worker_package_has_its_modules():
    modules = _modules(WORKER)
    assert len(modules) > 50
    # The flat layout is gone: the entry is the only module beside the package.
    assert sorted(p.name for p in WORKER.glob("*.py")) == ["maxkernel_worker.py"]


def test_no_import_cycle_inside_the_worker_package():
    assert cycles(import_graph()) == []


def test_no_module_reaches_for_another_modules_private_names():
    assert private_reaches() == []


def test_the_checks_see_a_cycle_and_a_private_reach(tmp_path):
    """The checks themselves: a lazy (function-level) import that closes a cycle, a relative
    import, and a private name read across modules are all found."""
    pkg = tmp_path / PACKAGE
    (pkg / "gen").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "gen" / "__init__.py").write_text("")
    (pkg / "gen" / "tpu.py").write_text("from . import gpu\n\ndef _helper():\n    return 1\n")
    (pkg / "gen" / "gpu.py").write_text(
        "def emit():\n    from mkworker.gen import tpu\n    return tpu._helper()\n")
    (pkg / "gen" / "other.py").write_text("from mkworker.gen.tpu import _helper\n")
    assert cycles(import_graph(tmp_path)) == [["mkworker.gen.gpu", "mkworker.gen.tpu"]]
    assert sorted(private_reaches(tmp_path)) == [
        "mkworker.gen.gpu:3: mkworker.gen.tpu._helper",
        "mkworker.gen.other: from mkworker.gen.tpu import _helper"]
