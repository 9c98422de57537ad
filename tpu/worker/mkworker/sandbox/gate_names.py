"""What the names in a candidate's source may stand for: the source gate's alias analysis.

A name is looked up the way Python looks it up (the function's own bindings, then the enclosing
functions', then the module's; class bodies are skipped by the functions inside them; `global` and
`nonlocal` followed), so `dt = jnp.float32` in one function and `dt = jnp.bfloat16` in another are
two different names. Where one name is bound to several imported things (`m = time` in one branch,
`m = os` in another) it may stand for any of them: the gate checks each. The analysis is a worklist
over the assignments: each binding is revisited only when a name it reads gains a meaning, so it
ends on every input (meanings are capped in depth and in number) in time near linear in the file.
"""

from __future__ import annotations

import ast

# A meaning deeper than this is cut to its first components: the forbidden names are all shorter,
# so the cut keeps every prefix the rules match, and `a = a.b` cannot grow without end.
MAX_DEPTH = 16
# More meanings than this for one name is not what kernels do; the gate refuses rather than guess.
MAX_MEANINGS = 64


# Load / Store / Del: shared singletons with nothing under them, not worth a visit.
_CONTEXTS = (ast.Load, ast.Store, ast.Del)


class TooManyMeanings(Exception):
    """One name may stand for more imported things than the gate follows."""

    def __init__(self, node: ast.AST, name: str):
        super().__init__(name)
        self.node = node
        self.name = name


class _ScopeInfo:
    __slots__ = ("global_decl", "is_class", "local", "node", "nonlocal_decl", "parent")

    def __init__(self, node, parent):
        self.node = node
        self.parent = parent  # the scope a lookup climbs to (class scopes skipped)
        self.is_class = isinstance(node, ast.ClassDef)
        self.local: set[str] = set()
        self.global_decl: set[str] = set()
        self.nonlocal_decl: set[str] = set()


def _cut(dotted: str) -> str:
    parts = dotted.split(".")
    return dotted if len(parts) <= MAX_DEPTH else ".".join(parts[:MAX_DEPTH])


class Names:
    """Scopes, bindings and the may-alias sets of one module's syntax tree.

    `tick` is called now and then with no argument; it may raise to stop the analysis (the gate's
    time bound)."""

    def __init__(self, tree: ast.Module, tick=lambda: None):
        self.tree = tree
        self._tick = tick
        self.scope_of: dict[int, _ScopeInfo] = {}
        self.own_names: set[str] = set()  # functions and classes the candidate defines (any scope)
        self.bound_names: set[str] = set()  # every name the candidate binds anywhere (shadows a builtin)
        self.classes: set[str] = set()
        self._raw_binds: list[tuple[_ScopeInfo, str]] = []
        self._pairs: list[tuple[ast.Name, _ScopeInfo, ast.AST]] = []  # (target, its scope, value)
        self._imports: list[tuple[_ScopeInfo, str, str]] = []  # (scope, local name, dotted)
        self.aliases: dict[tuple[int, str], set[str]] = {}
        self.own_instances: set[tuple[int, str]] = set()
        self._memo: dict[int, frozenset[str]] = {}
        self.parents: dict[int, ast.AST] = {}
        self.nodes: list[ast.AST] = []  # every node, each once (the gate's rules walk this list)
        self._module = _ScopeInfo(tree, None)
        self._walk()
        for scope, name in self._raw_binds:
            if name in scope.global_decl:
                self._module.local.add(name)
            elif name not in scope.nonlocal_decl:
                scope.local.add(name)

    def propagate(self):
        """Gives every binding its meanings; raises TooManyMeanings past the cap."""
        self._propagate()

    # -- scopes and bindings
    def _walk(self):
        # One pass over the tree: each node's scope, parent, and the bindings it makes.
        stack: list[tuple[ast.AST, _ScopeInfo, ast.AST | None]] = [(self.tree, self._module, None)]
        parents, nodes = self.parents, self.nodes
        while stack:
            node, scope, parent = stack.pop()
            nodes.append(node)
            if parent is not None:
                parents[id(node)] = parent
            if len(nodes) % 1024 == 0:
                self._tick()
            self.scope_of[id(node)] = scope
            kind = type(node)
            if kind is ast.Name:  # the commonest node: a leaf but for its context
                if type(node.ctx) is not ast.Load:
                    self._bind(scope, node.id)
                continue
            if kind is ast.Constant:
                continue
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                inner = _ScopeInfo(node, self._lookup_parent(scope))
                if not isinstance(node, ast.Lambda):
                    self._bind(scope, node.name)
                    self.own_names.add(node.name)
                    stack.extend((d, scope, node) for d in node.decorator_list)
                    if node.returns is not None:
                        stack.append((node.returns, scope, node))
                    stack.extend((s, inner, node) for s in node.body)
                else:
                    stack.append((node.body, inner, node))
                self._arguments(node, scope, inner, stack)
                continue
            if isinstance(node, ast.ClassDef):
                inner = _ScopeInfo(node, self._lookup_parent(scope))
                self._bind(scope, node.name)
                self.own_names.add(node.name)
                self.classes.add(node.name)
                stack.extend((c, scope, node) for c in (*node.decorator_list, *node.bases, *node.keywords))
                stack.extend((s, inner, node) for s in node.body)
                continue
            if isinstance(node, ast.Global):
                scope.global_decl.update(node.names)
            elif isinstance(node, ast.Nonlocal):
                scope.nonlocal_decl.update(node.names)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    local = a.asname or a.name.split(".")[0]
                    self._bind(scope, local)
                    self._imports.append((scope, local, a.name if a.asname else a.name.split(".")[0]))
            elif isinstance(node, ast.ImportFrom):
                base = ("." * (node.level or 0)) + (node.module or "")
                for a in node.names:
                    if a.name != "*":
                        local = a.asname or a.name
                        self._bind(scope, local)
                        self._imports.append((scope, local, f"{base}.{a.name}" if base else a.name))
            elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
                self._bind(scope, node.name)
            elif isinstance(node, ast.MatchMapping) and node.rest:
                self._bind(scope, node.rest)
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    self._add_pairs(t, node.value, scope)
            elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                self._add_pairs(node.target, node.value, scope)
            stack.extend((c, scope, node) for c in ast.iter_child_nodes(node) if type(c) not in _CONTEXTS)

    def _arguments(self, fn, outer: _ScopeInfo, inner: _ScopeInfo, stack):
        """Parameters bind in the function; defaults are evaluated where the def is, and a
        parameter with a default may stand for what the default stands for."""
        args = fn.args
        self.scope_of[id(args)] = inner
        self.parents[id(args)] = fn
        positional = [*args.posonlyargs, *args.args]
        for a in (*positional, *args.kwonlyargs, args.vararg, args.kwarg):
            if a is not None:
                self._bind(inner, a.arg)
                stack.append((a, inner, args))
        for a, d in zip(positional[len(positional) - len(args.defaults):], args.defaults):
            stack.append((d, outer, args))
            self._pairs.append((a, inner, d))
        for a, d in zip(args.kwonlyargs, args.kw_defaults):
            if d is not None:
                stack.append((d, outer, args))
                self._pairs.append((a, inner, d))

    def _bind(self, scope: _ScopeInfo, name: str):
        self._raw_binds.append((scope, name))
        self.bound_names.add(name)

    def _lookup_parent(self, scope: _ScopeInfo) -> _ScopeInfo:
        return scope.parent if scope.is_class else scope

    def _add_pairs(self, target, value, scope):
        if isinstance(target, ast.Name):
            self._pairs.append((target, scope, value))
        elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) and \
                len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts):
                self._add_pairs(t, v, scope)

    def _key(self, scope: _ScopeInfo, name: str) -> tuple[int, str]:
        """Where a use of `name` in `scope` finds its binding, as Python resolves it."""
        s = scope
        while s is not None:
            if name in s.global_decl:
                return (id(self._module.node), name)
            if name in s.local:
                return (id(s.node), name)
            s = s.parent
        return (id(self._module.node), name)

    def _store_key(self, scope: _ScopeInfo, name: str) -> tuple[int, str]:
        if name in scope.global_decl:
            return (id(self._module.node), name)
        if name in scope.nonlocal_decl and scope.parent is not None:
            return self._key(scope.parent, name)
        return (id(scope.node), name)

    # -- meanings, to a fixed point
    def _propagate(self):
        for scope, local, dotted in self._imports:
            self._add(self._store_key(scope, local), {dotted}, None)
        readers: dict[tuple[int, str], list[int]] = {}
        targets = []
        for i, (target, scope, value) in enumerate(self._pairs):
            name = target.arg if isinstance(target, ast.arg) else target.id
            targets.append(self._store_key(scope, name))
            for root in self._roots(value):
                readers.setdefault(self._key(self.scope_of.get(id(root), scope), root.id), []).append(i)
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in self.classes:
                self.own_instances.add(targets[-1])
        todo = list(range(len(self._pairs)))
        queued = set(todo)
        steps = 0
        while todo:
            i = todo.pop()
            queued.discard(i)
            steps += 1
            if steps % 256 == 0:
                self._tick()
            target, scope, value = self._pairs[i]
            meanings = self._resolve(value, scope, memo=False)
            name = target.arg if isinstance(target, ast.arg) else target.id
            if name in self.own_names or not meanings:
                continue
            if self._add(targets[i], meanings, target):
                for j in readers.get(targets[i], ()):
                    if j not in queued:
                        queued.add(j)
                        todo.append(j)

    def _add(self, key, meanings, node) -> bool:
        have = self.aliases.setdefault(key, set())
        new = {m for m in meanings if m not in have}
        if not new:
            return False
        have.update(new)
        if len(have) > MAX_MEANINGS:
            raise TooManyMeanings(node if node is not None else self.tree, key[1])
        return True

    def _roots(self, node):
        """The names an expression's meaning depends on."""
        while True:
            if isinstance(node, ast.Name):
                return [node]
            if isinstance(node, ast.Attribute):
                node = node.value
            elif isinstance(node, ast.Call) and self._is_getattr(node):
                node = node.args[0]
            else:
                return []

    def _is_getattr(self, node: ast.Call) -> bool:
        return isinstance(node.func, ast.Name) and node.func.id == "getattr" and \
            "getattr" not in self.bound_names and len(node.args) >= 2 and \
            isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)

    # -- queries
    def resolve(self, node) -> frozenset[str]:
        """Every dotted name an expression may stand for when it is rooted in an import
        (`t.perf_counter` after `import time as t` -> {"time.perf_counter"}); empty when none."""
        return self._resolve(node, self.scope_of.get(id(node), self._module), memo=True)

    def _resolve(self, node, scope, memo: bool) -> frozenset[str]:
        if memo and id(node) in self._memo:
            return self._memo[id(node)]
        out: frozenset[str] = frozenset()
        if isinstance(node, ast.Name):
            out = frozenset(self.aliases.get(self._key(self.scope_of.get(id(node), scope), node.id), ()))
        elif isinstance(node, ast.Attribute):
            out = frozenset(_cut(f"{b}.{node.attr}") for b in self._resolve(node.value, scope, memo))
        elif isinstance(node, ast.Call) and self._is_getattr(node):
            attr = node.args[1].value
            out = frozenset(_cut(f"{b}.{attr}") for b in self._resolve(node.args[0], scope, memo))
        if memo:
            self._memo[id(node)] = out
        return out

    def is_own_instance(self, node: ast.Name) -> bool:
        return self._key(self.scope_of.get(id(node), self._module), node.id) in self.own_instances
