"""Shared pieces of the MaxKernel worker: errors, cancellation, running user
source text as a module, and mapping exceptions back to lines of that text.

Only the standard library is imported here, so the protocol layer can load
this module before JAX.
"""

from __future__ import annotations

import ast
import itertools
import linecache
import os
import re
import sys
import threading
import traceback
import types

# Error kinds (see docs/worker-protocol.md).
PROTOCOL = "protocol"
UNKNOWN_OP = "unknown_op"
BAD_REQUEST = "bad_request"
SYNTAX = "syntax"
IMPORT = "import"
TRACE = "trace"
LOWERING = "lowering"
COMPILE = "compile"
RUNTIME = "runtime"
TASK = "task"
CANCELLED = "cancelled"
INTERNAL = "internal"


class WorkerError(Exception):
    """An error that becomes an `ok: false` response.

    `kind` is one of the error kinds above; `extra` is merged into the
    response's `error` object (for example `locations`, or the partial
    results of a cancelled autotune).
    """

    def __init__(self, kind: str, message: str, **extra):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.extra = extra

    def to_json(self) -> dict:
        out = {"kind": self.kind, "message": self.message}
        out.update(self.extra)
        return out


class Cancelled(WorkerError):
    def __init__(self, message: str = "cancelled by request", **extra):
        super().__init__(CANCELLED, message, **extra)


class CancelToken:
    """Set by the protocol thread, polled by the op thread at check points."""

    def __init__(self):
        self._event = threading.Event()

    def cancel(self):
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self):
        if self._event.is_set():
            raise Cancelled()


class Progress:
    """Sends progress notifications for one op (no-op when no sink)."""

    def __init__(self, sink=None, op_id=None, op=None):
        self._sink = sink
        self._id = op_id
        self._op = op

    def __call__(self, **fields):
        if self._sink is None:
            return
        msg = {"event": "progress", "id": self._id, "op": self._op}
        msg.update(fields)
        self._sink(msg)


# ---------------------------------------------------------------------------
# Running source text as a module.

_module_counter = itertools.count()


def _register_source(filename: str, source: str):
    """Makes tracebacks show the editor buffer, not whatever is on disk."""
    lines = source.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    linecache.cache[filename] = (len(source), None, lines, filename)


def parse_source(source: str, filename: str) -> ast.Module:
    try:
        return ast.parse(source, filename=filename, mode="exec")
    except SyntaxError as e:
        raise syntax_error(e, filename) from None


def syntax_error(e: SyntaxError, filename: str) -> WorkerError:
    line = e.lineno or 1
    col = e.offset or 1
    msg = e.msg or str(e)
    loc = {"line": line, "column": col, "message": msg}
    if getattr(e, "end_lineno", None) and (e.end_offset or 0) > 0:
        loc["end_line"] = e.end_lineno
        loc["end_column"] = e.end_offset
    where = e.filename or filename
    return WorkerError(SYNTAX, f"{type(e).__name__}: {msg} ({os.path.basename(where)}, line {line})",
                       locations=[loc] if _same_file(where, filename) else [], file=where)


class UserModule:
    """Executes source text in a fresh module namespace.

    The module gets a unique __name__ (so two versions of one file never
    share state) and is registered in sys.modules while it is alive, because
    dataclasses, typing and pickling look modules up there.  `extra_path`
    (the task's folder) is on sys.path during execution so sibling imports of
    a task file work.
    """

    def __init__(self, source: str, filename: str, *, tree: ast.Module | None = None,
                 extra_path: str | None = None, role: str = "user"):
        self.source = source
        self.filename = filename
        self.role = role
        self.name = f"_maxkernel_{role}_{next(_module_counter)}"
        self.module = types.ModuleType(self.name)
        self.module.__file__ = filename
        self.ns = self.module.__dict__
        self._tree = tree
        self._extra_path = extra_path

    def run(self):
        tree = self._tree if self._tree is not None else parse_source(self.source, self.filename)
        try:
            code = compile(tree, self.filename, "exec")
        except SyntaxError as e:
            raise syntax_error(e, self.filename) from None
        _register_source(self.filename, self.source)
        sys.modules[self.name] = self.module
        added = False
        if self._extra_path and self._extra_path not in sys.path:
            sys.path.insert(0, self._extra_path)
            added = True
        try:
            exec(code, self.ns)  # noqa: S102 - running the user's module is the point
        except SyntaxError as e:  # raised by a nested import / exec
            raise syntax_error(e, self.filename) from None
        except WorkerError:
            raise
        except BaseException as e:
            if isinstance(e, (KeyboardInterrupt,)):
                raise
            raise from_exception(IMPORT, e, self.filename,
                                 prefix=f"executing {os.path.basename(self.filename)} failed") from None
        finally:
            if added:
                try:
                    sys.path.remove(self._extra_path)
                except ValueError:
                    pass
        return self

    def get(self, name, default=None):
        return self.ns.get(name, default)

    def close(self):
        sys.modules.pop(self.name, None)


# ---------------------------------------------------------------------------
# Mapping exceptions to lines of the user's source.

def _same_file(a: str | None, b: str | None) -> bool:
    if not a or not b:
        return False
    if a == b:
        return True
    try:
        return os.path.abspath(a) == os.path.abspath(b)
    except Exception:  # noqa: BLE001
        return False


def _exception_chain(exc: BaseException) -> list[BaseException]:
    """exc, then its causes/contexts, most recently raised first."""
    out, seen = [], set()
    todo = [exc]
    while todo:
        e = todo.pop(0)
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        out.append(e)
        todo.append(e.__cause__)
        if not e.__suppress_context__:
            todo.append(e.__context__)
    return out


def _user_frames(exc: BaseException, filename: str) -> list[traceback.FrameSummary]:
    try:
        frames = traceback.extract_tb(exc.__traceback__)
    except Exception:  # noqa: BLE001
        return []
    return [f for f in frames if _same_file(f.filename, filename)]


def _first_line(msg: str) -> str:
    for line in msg.splitlines():
        if line.strip():
            return line.strip()
    return msg.strip()


_FILE_LINE_RE_TMPL = r"(?:{name}|{base})(?:\"|')?(?:, line |:)(\d+)(?::(\d+))?"
_LINE_HINT_RE = re.compile(r"\bline (\d+)(?:,? col(?:umn)? (\d+))?", re.IGNORECASE)


def message_hints(text: str, filename: str, num_lines: int | None = None) -> list[dict]:
    """Locations named in error text: `file.py:12`, `"file.py":12:5` (MLIR
    locations) and `File "file.py", line 12`, plus bare `line N` hints from
    Mosaic diagnostics when they fall inside the source."""
    hints, seen = [], set()
    if not text:
        return hints
    pat = re.compile(_FILE_LINE_RE_TMPL.format(name=re.escape(filename),
                                               base=re.escape(os.path.basename(filename))))
    for m in pat.finditer(text):
        line = int(m.group(1))
        col = int(m.group(2)) if m.group(2) else 1
        if (line, col) in seen or (num_lines and line > num_lines):
            continue
        seen.add((line, col))
        hints.append({"line": line, "column": col})
    if not hints:
        for m in _LINE_HINT_RE.finditer(text):
            line = int(m.group(1))
            if num_lines and not (1 <= line <= num_lines):
                continue
            col = int(m.group(2)) if m.group(2) else 1
            if (line, col) in seen:
                continue
            seen.add((line, col))
            hints.append({"line": line, "column": col, "hint": "line number from the error text"})
    return hints


def locations_for(exc: BaseException, filename: str, source: str | None = None) -> list[dict]:
    """[{line, column, message}] for the user's file, most specific first.

    The first entry is the deepest frame in the user's file, taken from the
    innermost exception of the chain (JAX attaches the user stack of the
    failing operation as the cause of lowering errors); then other frames
    and locations named in the message text.
    """
    chain = _exception_chain(exc)
    summary = _first_line(f"{type(exc).__name__}: {exc}")
    locs: list[dict] = []
    seen: set[int] = set()

    def add(line, col, message, **kw):
        if not line or line in seen:
            return
        seen.add(line)
        d = {"line": int(line), "column": int(col or 1), "message": message}
        d.update(kw)
        locs.append(d)

    # Innermost (original) exception first: it carries the user's frame of
    # the failing operation; the outer ones mostly end in worker code.
    for e in reversed(chain):
        frames = _user_frames(e, filename)
        if frames:
            f = frames[-1]
            col = (f.colno + 1) if getattr(f, "colno", None) is not None else 1
            add(f.lineno, col, summary)
    for e in reversed(chain):
        for f in reversed(_user_frames(e, filename)[:-1]):
            col = (f.colno + 1) if getattr(f, "colno", None) is not None else 1
            add(f.lineno, col, f"called from here ({f.name})", related=True)
    num_lines = len(source.splitlines()) if source is not None else None
    for e in chain:
        for h in message_hints(str(e), filename, num_lines):
            add(h["line"], h["column"], "named in the error message: " + summary,
                related=bool(locs))
    return locs


def from_exception(kind: str, exc: BaseException, filename: str, *, prefix: str | None = None,
                   source: str | None = None, **extra) -> WorkerError:
    if isinstance(exc, WorkerError):
        return exc
    if isinstance(exc, SyntaxError) and _same_file(exc.filename, filename):
        return syntax_error(exc, filename)
    text = f"{type(exc).__name__}: {exc}"
    msg = f"{prefix}: {text}" if prefix else text
    err = WorkerError(kind, _trim(msg), locations=locations_for(exc, filename, source),
                      exception_type=type(exc).__name__, **extra)
    tb = "".join(traceback.format_exception(exc))
    err.extra["traceback"] = _trim(tb, 20000)
    return err


def _trim(s: str, limit: int = 8000) -> str:
    return s if len(s) <= limit else s[:limit] + f"... [{len(s) - limit} more characters]"
