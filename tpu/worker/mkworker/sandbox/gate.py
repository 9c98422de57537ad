"""The source gate: a candidate whose text reaches for the worker's clock, checks or state is
refused before a line of it runs.

Candidate code runs inside the worker's own process, so it could rebind `time.perf_counter`,
`jax.block_until_ready` or the worker's functions (through `sys.modules`, `gc`, frames, ...), start
threads that change things while the checks run, or write a forged verdict to the protocol
stream. Legitimate Pallas kernels need none of that, so the gate reads the syntax tree and
refuses those constructs with the line and the rule (docs/worker-protocol.md, "Defences").

What the gate does NOT refuse: shadowing a name in the candidate's own namespace
(`from time import perf_counter; perf_counter = f` only changes the candidate's globals), reading
attributes of modules, `sys.path`, `os.environ.get`, `jax.debug.print`. The runtime check in
judge.clock backs the gate up: anything watched that changed while the candidate ran is refused.
"""

from __future__ import annotations

import ast
import os
import time

from mkworker import common as C
from mkworker.sandbox import gate_names

# Bound before any candidate runs: the gate's time bound reads this clock.
_monotonic = time.monotonic
# The gate as a whole answers within this many seconds or refuses with a clear error.
TIME_BOUND_S = 30.0

REFUSED = "refused"  # the error kind (docs/worker-protocol.md, Errors)

# Modules a candidate may not import at all, by rule.
_FORBIDDEN_MODULES = {
    "introspection": ("ctypes", "_ctypes", "cffi", "gc", "inspect", "importlib", "builtins", "__builtin__",
                      "pickle", "_pickle", "marshal", "copyreg", "shelve", "dill", "cloudpickle", "runpy",
                      "code", "codeop", "pdb", "bdb", "trace", "tracemalloc"),
    "concurrency": ("threading", "_thread", "multiprocessing", "_multiprocessing", "subprocess",
                    "_posixsubprocess", "concurrent", "asyncio", "signal", "pty", "socket", "_socket"),
    "file-descriptor": ("fcntl", "mmap"),
    "worker-state": ("maxkernel_worker", "__main__"),
}
_WORKER_PREFIXES = ("mkworker", "mkw_", "_maxkernel_")

# Dotted names (and everything under them) a candidate may not touch, by rule.
_FORBIDDEN_NAMES = {
    "worker-state": ("sys.modules",),
    "introspection": ("sys._getframe", "sys._current_frames", "sys.settrace", "sys.setprofile",
                      "sys.meta_path", "sys.path_hooks", "sys.path_importer_cache", "sys.addaudithook",
                      "sys.monitoring", "types.FunctionType", "types.CodeType"),
    "concurrency": tuple(f"os.{n}" for n in (
        "fork", "forkpty", "system", "popen", "spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv",
        "spawnve", "spawnvp", "spawnvpe", "execl", "execle", "execlp", "execlpe", "execv", "execve",
        "execvp", "execvpe", "posix_spawn", "posix_spawnp", "kill", "killpg", "register_at_fork")),
    "file-descriptor": tuple(f"os.{n}" for n in (
        "write", "writev", "pwrite", "pwritev", "sendfile", "dup", "dup2", "fdopen", "open", "openpty",
        "close", "closerange", "pipe", "pipe2", "set_inheritable", "set_blocking")) + ("io.FileIO",
                                                                                       "_io.FileIO"),
    "environment": ("os.putenv", "os.unsetenv", "os.environb", "jax.config.update",
                    "jax.config.parse_flags_with_absl", "jax.config.config_with_absl"),
}
# os.environ may be read (`os.environ.get(...)`, `os.environ["X"]`, `"X" in os.environ`), nothing else.
_ENVIRON = "os.environ"
# sys.path may be read too (`list(sys.path)`, `p in sys.path`): a candidate that adds a folder to
# it could import a helper the gate never read.
_SYS_PATH = "sys.path"
_READ_ONLY = {_ENVIRON: ("get", "copy", "keys", "items", "values"),
              _SYS_PATH: ("index", "count", "copy")}
_READING_BUILTINS = ("list", "tuple", "len", "sorted", "set", "dict", "iter", "enumerate", "reversed")

# Attributes that lead from any object to globals, code objects, frames or the class tree.
_BLOCKED_ATTRS = frozenset((
    "__globals__", "__code__", "__closure__", "__builtins__", "__subclasses__", "__bases__", "__base__",
    "__mro__", "__dict__", "__setattr__", "__delattr__", "__getattribute__", "__import__", "__loader__",
    "__defaults__", "__kwdefaults__", "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "f_trace",
    "tb_frame", "tb_next", "gi_frame", "gi_code", "cr_frame", "ag_frame"))

# Builtins that run code built at run time or reach namespaces by name.
_DYNAMIC_BUILTINS = frozenset(("exec", "eval", "compile", "__import__", "breakpoint", "globals", "locals",
                               "vars"))

_TEXT = {
    "module-attribute": "{verb} `{target}`, an attribute of the imported `{root}`: a candidate may not change "
                        "what it imports (the worker's clock and checks use the same modules)",
    "foreign-attribute": "{verb} the attribute `{attr}` of `{expr}`, an object the candidate did not create: "
                         "only `self`, `cls` and the candidate's own functions, classes and their instances "
                         "may be changed",
    "introspection": "{what}: introspection and low-level modules reach and change the worker's state",
    "concurrency": "{what}: a candidate may not start threads or processes, or signal them",
    "worker-state": "{what}: a candidate may not read the worker's state or the task's reference",
    "dunder": "uses `{name}`: it reaches functions' globals, code, frames or the class tree, the way "
              "around every other check",
    "dynamic-code": "uses `{name}`: code or names built at run time cannot be checked",
    "environment": "{what}: it changes the process environment or JAX's global configuration, which the "
                   "worker and the reference share",
    "file-descriptor": "{what}: a candidate may not write to or reopen file descriptors (the worker's "
                       "protocol stream is one)",
}


class Violation:
    def __init__(self, node: ast.AST, rule: str, text: str):
        self.line = getattr(node, "lineno", 1) or 1
        self.column = (getattr(node, "col_offset", 0) or 0) + 1
        self.rule = rule
        self.text = text

    def to_json(self) -> dict:
        return {"line": self.line, "column": self.column, "rule": self.rule, "message": self.text}


def _module_rule(name: str, task_modules) -> str | None:
    top = name.split(".")[0]
    for rule, mods in _FORBIDDEN_MODULES.items():
        if top in mods:
            return rule
    if top.startswith(_WORKER_PREFIXES) or top in task_modules:
        return "worker-state"
    return None


_RULE_OF_NAME = {n: rule for rule, names in _FORBIDDEN_NAMES.items() for n in names}


def _name_rule(full: str) -> str | None:
    """The rule of the forbidden name `full` is or lies under (`os.fork`, `sys.modules.x`)."""
    end = len(full)
    while end > 0:
        rule = _RULE_OF_NAME.get(full[:end])
        if rule:
            return rule
        end = full.rfind(".", 0, end)
    return None


def _dotted(node) -> str:
    """Source-like text of a Name/Attribute chain, for messages."""
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001
        return "?"


class GateTimeout(Exception):
    """The gate's analysis ran past its time bound."""


class _Gate:
    def __init__(self, tree: ast.Module, task_modules, deadline: float):
        self.tree = tree
        self.task_modules = frozenset(task_modules)
        self.violations: list[Violation] = []
        self._deadline = deadline
        self.names = gate_names.Names(tree, self._tick)
        self.parents = self.names.parents
        try:
            self.names.propagate()
        except gate_names.TooManyMeanings as e:
            self.add(e.node, "dynamic-code", name=f"`{e.name}` bound to more than "
                                                   f"{gate_names.MAX_MEANINGS} imported things")
            self.names.aliases.clear()  # nothing resolves: stores on unknown objects are refused as foreign
        self.own_names = self.names.own_names
        self.bound_names = self.names.bound_names

    def _tick(self):
        if _monotonic() > self._deadline:
            raise GateTimeout()

    def resolve(self, node) -> frozenset[str]:
        """Every dotted name an expression may stand for when it is rooted in an import."""
        return self.names.resolve(node)

    def _root(self, node):
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        return node

    def _chain_has_call(self, node) -> bool:
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
            if isinstance(node, ast.Call):
                return True
        return isinstance(node, ast.Call)

    def _is_self(self, node) -> bool:
        if not isinstance(node, ast.Name) or node.id not in ("self", "cls"):
            return False
        p = self.parents.get(id(node))
        while p is not None and not isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef)):
            p = self.parents.get(id(p))
        return p is not None and bool(p.args.args) and p.args.args[0].arg == node.id

    # -- the rules
    def add(self, node, rule, **fields):
        self.violations.append(Violation(node, rule, _TEXT[rule].format(**fields)))

    def run(self) -> list[Violation]:
        for count, node in enumerate(self.names.nodes):
            if count % 1024 == 0:
                self._tick()
            if isinstance(node, ast.Import):
                for a in node.names:
                    self._check_import(node, a.name)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: `from . import judge.run`, `from .reference import x`
                    for name in ([base] if base else []) + [a.name for a in node.names]:
                        if _module_rule(name, self.task_modules):
                            self._check_import(node, name)
                    continue
                self._check_import(node, base)
                for a in node.names:
                    if a.name != "*":
                        self._check_name(node, f"{base}.{a.name}", imported=True)
            elif isinstance(node, ast.Attribute):
                self._check_attribute(node)
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)):
                self._check_item_store(node)
            elif isinstance(node, ast.Name):
                self._check_builtin_name(node)
            elif isinstance(node, ast.Call):
                self._check_call(node)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    node.value in _BLOCKED_ATTRS:
                self.add(node, "dunder", name=node.value)
        # One report per line and rule, in source order.
        seen, out = set(), []
        for v in sorted(self.violations, key=lambda v: (v.line, v.column)):
            if (v.line, v.rule) not in seen:
                seen.add((v.line, v.rule))
                out.append(v)
        return out

    def _check_import(self, node, name: str):
        rule = _module_rule(name, self.task_modules)
        if rule:
            self.add(node, rule, what=f"imports `{name}`")
        else:
            self._check_name(node, name, imported=True)

    def _check_name(self, node, full: str, imported=False):
        rule = _name_rule(full)
        if rule:
            self.add(node, rule, what=("imports" if imported else "uses") + f" `{full}`")

    def _check_attribute(self, node: ast.Attribute):
        if node.attr in _BLOCKED_ATTRS:
            self.add(node, "dunder", name=node.attr)
            return
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self._check_store(node, node.value, node.attr, "deletes" if isinstance(node.ctx, ast.Del)
                              else "assigns")
            return
        for full in sorted(self.resolve(node)):
            self._check_resolved_attribute(node, full)

    def _check_resolved_attribute(self, node: ast.Attribute, full: str):
        if full in ("operator.attrgetter", "operator.methodcaller"):
            call = self.parents.get(id(node))
            if not (isinstance(call, ast.Call) and call.func is node and call.args and
                    all(isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value not in _BLOCKED_ATTRS
                        for a in call.args[:1 if full.endswith("methodcaller") else None])):
                self.add(node, "dynamic-code", name=f"{full} with a computed name")
            return
        if full in _READ_ONLY:
            self._check_read_only_use(node, full)
            return
        parent = self.parents.get(id(node))
        if isinstance(parent, ast.Attribute) and parent.value is node:
            return  # the outer attribute is checked on its own
        if full == "os.write" and isinstance(parent, ast.Call) and parent.func is node and parent.args and \
                isinstance(parent.args[0], ast.Constant) and parent.args[0].value in (1, 2):
            return  # fds 1 and 2 both lead to the worker's stderr; the protocol has private copies
        self._check_name(node, full)

    def _check_read_only_use(self, node, full: str):
        parent = self.parents.get(id(node))
        if isinstance(parent, ast.Attribute) and parent.attr in _READ_ONLY[full]:
            return
        if isinstance(parent, ast.Subscript) and parent.value is node and isinstance(parent.ctx, ast.Load):
            return
        if isinstance(parent, ast.Compare) and node in parent.comparators and \
                all(isinstance(op, (ast.In, ast.NotIn)) for op in parent.ops):
            return
        if isinstance(parent, ast.Call) and node in parent.args and isinstance(parent.func, ast.Name) and \
                parent.func.id in _READING_BUILTINS and parent.func.id not in self.bound_names:
            return
        if isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is node:
            return
        if full == _ENVIRON:
            self.add(node, "environment", what="uses `os.environ` other than to read it")
        else:
            self.add(node, "worker-state", what="uses `sys.path` other than to read it (a folder added to it "
                                                "brings in modules the gate never read)")

    def _check_store(self, node, obj, attr: str, verb: str):
        meanings = self.resolve(obj)
        if meanings:
            full = min(meanings)
            self.add(node, "module-attribute", verb=verb, target=f"{full}.{attr}", root=full)
            return
        root = self._root(obj)
        own = (isinstance(root, ast.Name) and not self._chain_has_call(obj) and
               (self._is_self(root) or root.id in self.own_names or self.names.is_own_instance(root)))
        if not own:
            self.add(node, "foreign-attribute", verb=verb, attr=attr, expr=_dotted(obj))

    def _check_item_store(self, node: ast.Subscript):
        for full in sorted(self.resolve(node.value)):
            self._check_resolved_item_store(node, full)

    def _check_resolved_item_store(self, node: ast.Subscript, full: str):
        if full == _ENVIRON or full.startswith(_ENVIRON + "."):
            self.add(node, "environment", what="changes `os.environ`")
        elif full == _SYS_PATH:
            self.add(node, "worker-state", what="changes `sys.path`")
        elif _name_rule(full) == "worker-state":
            self.add(node, "worker-state", what=f"changes `{full}`")
        else:
            verb = "deletes an item of" if isinstance(node.ctx, ast.Del) else "assigns an item of"
            self.add(node, "module-attribute", verb=verb, target=full, root=full.split(".")[0])

    def _check_builtin_name(self, node: ast.Name):
        if node.id in _BLOCKED_ATTRS:
            self.add(node, "dunder", name=node.id)
            return
        if isinstance(node.ctx, ast.Load):
            read_only = [full for full in sorted(self.resolve(node)) if full in _READ_ONLY]
            for full in read_only:
                self._check_read_only_use(node, full)  # `from os import environ`, `p = sys.path`
            if read_only:
                return
        if not isinstance(node.ctx, ast.Load) or node.id in self.bound_names:
            return
        if node.id in _DYNAMIC_BUILTINS:
            self.add(node, "dynamic-code", name=node.id)
        elif node.id in ("setattr", "delattr"):
            parent = self.parents.get(id(node))
            if not (isinstance(parent, ast.Call) and parent.func is node):
                self.add(node, "dynamic-code", name=node.id)  # passed around: cannot be followed

    def _check_call(self, node: ast.Call):
        f = node.func
        if not isinstance(f, ast.Name) or f.id in self.bound_names:
            return
        if f.id in ("setattr", "delattr"):
            if not node.args:
                return
            name = node.args[1].value if len(node.args) > 1 and isinstance(node.args[1], ast.Constant) else "?"
            if isinstance(name, str) and name in _BLOCKED_ATTRS:
                return  # reported as dunder
            self._check_store(node, node.args[0], str(name), "deletes" if f.id == "delattr" else "assigns")
        elif f.id == "getattr" and len(node.args) >= 2:
            attr = node.args[1]
            if not (isinstance(attr, ast.Constant) and isinstance(attr.value, str)) and \
                    not self._is_self(node.args[0]):
                self.add(node, "dynamic-code", name="getattr with a computed name")
        elif f.id == "open" and node.args:
            first = node.args[0]
            mode = node.args[1] if len(node.args) > 1 else next(
                (k.value for k in node.keywords if k.arg == "mode"), None)
            if isinstance(first, ast.Constant) and isinstance(first.value, int):
                self.add(node, "file-descriptor", what="opens a file descriptor by number")
            elif mode is not None and not (isinstance(mode, ast.Constant) and isinstance(mode.value, str) and
                                           not set(mode.value) & set("wax+")):
                self.add(node, "file-descriptor", what="opens a file for writing")


def check_source(source: str, filename: str = "<buffer>", *, task_modules=(),
                 time_bound_s: float | None = None) -> list[Violation]:
    """The gate's findings for a source text; [] when it does not parse (the syntax error is
    reported by the normal path, with its own kind). Raises GateTimeout past the time bound."""
    bound = TIME_BOUND_S if time_bound_s is None else time_bound_s
    deadline = _monotonic() + bound
    try:
        tree = ast.parse(source, filename=filename, mode="exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    if _monotonic() > deadline:
        raise GateTimeout()
    return _Gate(tree, task_modules, deadline).run()


def refuse(source: str, filename: str = "<buffer>", *, task_modules=(), what: str = "candidate") -> None:
    """Raises WorkerError(kind "refused") naming the first violation's line and rule, or the time
    bound when the gate could not finish (never a silent hang)."""
    try:
        found = check_source(source, filename, task_modules=task_modules)
    except GateTimeout:
        lines = source.count("\n") + 1
        raise C.WorkerError(
            REFUSED,
            f"{os.path.basename(filename)}: the source gate did not finish reading the {what} within "
            f"{TIME_BOUND_S:g} s ({lines} lines); it is refused unread [gate-time]",
            rule="gate-time", file=filename, locations=[], violations=[]) from None
    if not found:
        return
    first = found[0]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    raise C.WorkerError(
        REFUSED,
        f"{os.path.basename(filename)}:{first.line}: the {what} {first.text} [{first.rule}]{more}",
        rule=first.rule, file=filename,
        locations=[{"line": v.line, "column": v.column, "message": f"{v.text} [{v.rule}]"} for v in found],
        violations=[v.to_json() for v in found])


def _imported_modules(source: str) -> list[str]:
    """Every dotted module an import may load: `a.b.c` -> a, a.b, a.b.c; `from a.b import c` ->
    a, a.b, a.b.c (c may be a submodule)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    dotted = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            dotted.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            dotted.extend(f"{node.module}.{a.name}" for a in node.names if a.name != "*")
            dotted.append(node.module)
    out = []
    for d in dotted:
        parts = d.split(".")
        out.extend(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return list(dict.fromkeys(out))


def refuse_with_helpers(source: str, filename: str, search_dir: str | None, *, task_modules=()) -> None:
    """refuse() for the candidate and for every module it imports from its own folder (a helper
    file beside it runs in the worker just as the candidate does), recursively."""
    refuse(source, filename, task_modules=task_modules)
    if not search_dir or not os.path.isdir(search_dir):
        return
    seen = {os.path.abspath(filename)} if os.path.isabs(filename) else set()
    todo = [source]
    while todo:
        for top in _imported_modules(todo.pop()):
            rel = os.path.join(search_dir, *top.split("."))
            for path in (rel + ".py", os.path.join(rel, "__init__.py")):
                path = os.path.abspath(path)
                if path in seen or not os.path.isfile(path):
                    continue
                seen.add(path)
                try:
                    with open(path, encoding="utf-8") as f:
                        text = f.read()
                except (OSError, UnicodeDecodeError):
                    continue
                refuse(text, path, task_modules=task_modules, what=f"helper module `{top}` the candidate imports")
                todo.append(text)


def task_module_names(*paths) -> tuple[str, ...]:
    """Module names a candidate could import the task's own files under (`baseline`, `reference`)."""
    out = []
    for p in paths:
        if p and isinstance(p, str) and not p.startswith("<"):
            stem = os.path.splitext(os.path.basename(p))[0]
            if stem:
                out.append(stem)
    return tuple(out)
