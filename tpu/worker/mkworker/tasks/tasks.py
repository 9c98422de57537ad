"""Tasks: where the frozen reference, the inputs and the tolerances come
from, and which function of the candidate source is the entry point.

Three forms (docs/tasks.md):
  jaxbench  - baseline.py with CONFIG, create_inputs, workload (+TOLERANCES,
              get_flops, TUNED_PARAMS); the candidate defines `workload`.
  maxkernel - a folder with kernel_task.yaml naming the reference file, its
              inputs function and its reference function.
  infile    - the editor buffer defines reference(*inputs) and
              make_inputs(key); the kernel is request.kernel or `candidate`.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import os
import re
from collections.abc import Callable

import jax
import jax.numpy as jnp

from mkworker import common as C
from mkworker.tasks import yaml

# Default tolerances per output dtype: (rtol, atol).  atol is scaled by the
# output magnitude when comparing: atol_eff = atol * max(1, max|ref|).
DEFAULT_TOLERANCES = {
    "float64": (1e-7, 1e-7),
    "float32": (1e-5, 1e-5),
    "float16": (2e-3, 2e-3),
    "bfloat16": (2e-2, 2e-2),
    "complex64": (1e-5, 1e-5),
    "complex128": (1e-7, 1e-7),
}
# On a TPU, f32 matmuls default to bfloat16 MXU passes, so the f32 default
# is relaxed there (a task's TOLERANCES always wins).
TPU_FLOAT32_TOLERANCE = (2e-3, 2e-3)
FP8_TOLERANCE = (1.25e-1, 1.25e-1)

KEY_PARAM_NAMES = ("key", "rng", "prng_key", "rng_key", "prng", "seed_key")


@dataclasses.dataclass(eq=False, kw_only=True)
class Task:
    """A resolved task: the frozen reference module and how to use it."""

    form: str
    ref_module: C.UserModule
    reference_fn: Callable
    inputs_fn: Callable
    inputs_name: str
    reference_name: str
    default_entry: str | None
    tolerances: dict | None = None  # None: the per-dtype defaults
    task_dir: str | None = None
    candidate_source: str | None = None
    candidate_filename: str | None = None
    reference_frozen: bool = True
    get_flops: Callable | None = None
    description: str | None = None
    # "dynamic_static": the inputs function returns (dynamic_args, static_args) (MaxKernel).
    inputs_convention: str = "plain"

    def __post_init__(self):
        self.inputs_takes_key = takes_key(self.inputs_fn)
        self.load_warnings: list[str] = []
        self.extra_modules: list[C.UserModule] = []  # closed with the task
        self.inputs_module = self.ref_module  # where the inputs function lives (errors point there)
        # A suite convention (apply_convention): None compares with the worker's own rules.
        self.convention = None
        self.accept_dtype_difference = False
        # The instance evaluated: None = the task's own shapes; see tasks.shrink.
        self.shrink = None
        self.cache_salt = ""  # more text that decides the inputs (judge.golden's key)
        self._base_inputs = None

    def describe(self) -> dict:
        return {
            "form": self.form,
            "reference": self.reference_name,
            "reference_file": self.ref_module.filename,
            "inputs": self.inputs_name,
            "inputs_take_key": self.inputs_takes_key,
            "entry": self.default_entry,
            "tolerances": self.tolerances,
            "convention": self.convention,
            "reference_frozen": self.reference_frozen,
        }

    def inputs_error(self, e: BaseException) -> C.WorkerError:
        """The error for an exception the inputs function raised, pointing into its file."""
        mod = self.inputs_module
        return C.from_exception(C.TASK, e, mod.filename, source=mod.source, file=mod.filename,
                                prefix=f"the task's inputs function `{self.inputs_name}` failed")

    def close(self):
        self.ref_module.close()
        for m in self.extra_modules:
            m.close()


def takes_key(fn) -> bool:
    """True when the inputs function should be called with a PRNG key: it
    has a required positional parameter, or its first parameter is named
    like a key (key, rng, prng_key, ...).  JAXBench's
    `create_inputs(dtype=...)` has only defaulted, non-key parameters and is
    called with no arguments."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    params = [p for p in sig.parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not params:
        return False
    first = params[0]
    if first.default is inspect.Parameter.empty:
        return True
    return first.name.lower() in KEY_PARAM_NAMES


def _read(path: str, what: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise C.WorkerError(C.TASK, f"cannot read {what} {path!r}: {e.strerror or e}") from None


def _require_callable(mod: C.UserModule, name: str, what: str):
    fn = mod.get(name)
    if fn is None:
        raise C.WorkerError(C.TASK, f"{os.path.basename(mod.filename)} defines no {what} `{name}`",
                            locations=[])
    if not callable(fn):
        raise C.WorkerError(C.TASK, f"`{name}` in {os.path.basename(mod.filename)} is not callable")
    return fn


def parse_tolerances(obj, where: str):
    if obj is None:
        return None
    if not isinstance(obj, dict):
        raise C.WorkerError(C.TASK, f"{where}: TOLERANCES must be a dict with rtol/atol")
    out = {}
    for k in ("rtol", "atol"):
        if k in obj and obj[k] is not None:
            v = obj[k]
            if isinstance(v, (list, tuple)):
                # MaxKernel: one value per input configuration; the first configuration is the
                # one evaluated (judge.run.split_inputs), so is its tolerance.
                if not v:
                    raise C.WorkerError(C.TASK, f"{where}: {k} is an empty list")
                v = v[0]
            try:
                out[k] = float(v)
            except (TypeError, ValueError):
                raise C.WorkerError(C.TASK, f"{where}: {k} must be a number, got {obj[k]!r}") from None
    return out or None


# Suite conventions: what a suite's own harness decides where a task says nothing.
#   jaxbench  - JAXBench compares with allclose(atol=1e-2, rtol=1e-2) and lets the Pallas
#               output's dtype differ from the reference's (float32 vs bfloat16).
#   maxkernel - MaxKernel's harness: rtol/atol 1e-3 when kernel_task.yaml sets none, and
#               allclose also accepts a different output dtype.
CONVENTIONS = {
    "jaxbench": {"rtol": 1e-2, "atol": 1e-2, "accept_dtype_difference": True},
    "maxkernel": {"rtol": 1e-3, "atol": 1e-3, "accept_dtype_difference": True},
}


def apply_convention(task: Task, name) -> None:
    """Fills the convention's tolerances where the task sets none and records it on the task."""
    if name is None:
        return
    if name not in CONVENTIONS:
        raise C.WorkerError(C.BAD_REQUEST, f"unknown task convention {name!r} "
                                           f"(expected one of {', '.join(sorted(CONVENTIONS))})")
    conv = CONVENTIONS[name]
    source = "task" if task.tolerances else "convention"
    tol = dict(task.tolerances or {})
    for k in ("rtol", "atol"):
        tol.setdefault(k, conv[k])
    task.tolerances = tol
    task.convention = {"name": name, "tolerances": source,
                       "dtype_differences": "accepted (both outputs compared in float32)"
                       if conv["accept_dtype_difference"] else "refused"}
    task.accept_dtype_difference = conv["accept_dtype_difference"]


def resolve(task: dict, request_source: str | None, request_filename: str | None) -> Task:
    if not isinstance(task, dict):
        raise C.WorkerError(C.BAD_REQUEST, "`task` must be an object with a `form` field")
    form = task.get("form")
    if form == "jaxbench":
        resolved = _jaxbench(task)
    elif form == "maxkernel":
        resolved = _maxkernel(task)
    elif form == "infile":
        resolved = _infile(task, request_source, request_filename)
    else:
        raise C.WorkerError(C.BAD_REQUEST,
                            f"unknown task form {form!r} (expected jaxbench, maxkernel or infile)")
    try:
        apply_convention(resolved, task.get("convention"))
    except BaseException:
        resolved.close()
        raise
    return resolved


def _source_from(task: dict, path_key: str, source_key: str, filename_key: str, what: str):
    if task.get(source_key) is not None:
        src = task[source_key]
        if not isinstance(src, str):
            raise C.WorkerError(C.BAD_REQUEST, f"task.{source_key} must be a string")
        fname = task.get(filename_key) or task.get(path_key) or f"<{what}>"
        return src, fname
    path = task.get(path_key)
    if not path:
        raise C.WorkerError(C.BAD_REQUEST, f"task needs `{path_key}` (a path) or `{source_key}` (text)")
    path = os.path.abspath(path)
    return _read(path, what), path


JAXBENCH_CANDIDATES = ("optimized.py", "candidate.py")  # JAXBench's name, then this project's


def _jaxbench(task: dict) -> Task:
    if task.get("dir") and not task.get("baseline") and task.get("baseline_source") is None:
        # A JAXBench task folder: baseline.py, and its Pallas version when there is one.
        folder = os.path.abspath(task["dir"])
        task = dict(task, baseline=os.path.join(folder, "baseline.py"))
        if not task.get("candidate"):
            found = [os.path.join(folder, n) for n in JAXBENCH_CANDIDATES
                     if os.path.isfile(os.path.join(folder, n))]
            if found:
                task["candidate"] = found[0]
    src, fname = _source_from(task, "baseline", "baseline_source", "baseline_filename", "baseline")
    task_dir = os.path.dirname(fname) if os.path.isabs(fname) else None
    mod = C.UserModule(src, fname, extra_path=task_dir, role="reference").run()
    try:
        create_inputs = _require_callable(mod, task.get("inputs", "create_inputs"), "inputs function")
        workload = _require_callable(mod, task.get("reference", "workload"), "reference function")
        tol = parse_tolerances(mod.get("TOLERANCES"), os.path.basename(fname))
        if task.get("rtol") is not None or task.get("atol") is not None:
            tol = dict(tol or {})
            tol.update(parse_tolerances({"rtol": task.get("rtol"), "atol": task.get("atol")}, "task") or {})
        cand_src = cand_name = None
        if task.get("candidate"):
            cand_name = os.path.abspath(task["candidate"])
            cand_src = _read(cand_name, "candidate")
        gf = mod.get("get_flops")
        return Task(form="jaxbench", ref_module=mod, reference_fn=workload,
                    inputs_fn=create_inputs, inputs_name=task.get("inputs", "create_inputs"),
                    reference_name=task.get("reference", "workload"),
                    default_entry=task.get("entry", "workload"), tolerances=tol, task_dir=task_dir,
                    candidate_source=cand_src, candidate_filename=cand_name,
                    get_flops=gf if callable(gf) else None)
    except BaseException:
        mod.close()
        raise


def load_kernel_task_yaml(task: dict):
    if task.get("yaml"):
        ypath = os.path.abspath(task["yaml"])
    elif task.get("dir"):
        ypath = os.path.join(os.path.abspath(task["dir"]), "kernel_task.yaml")
    else:
        raise C.WorkerError(C.BAD_REQUEST, "maxkernel task needs `dir` (folder) or `yaml` (file path)")
    text = _read(ypath, "kernel_task.yaml")
    try:
        cfg = yaml.loads(text)
    except yaml.YamlError as e:
        raise C.WorkerError(C.TASK, f"{ypath}: {e}",
                            locations=[{"line": e.line, "column": 1, "message": str(e)}] if e.line else [],
                            file=ypath) from None
    if not isinstance(cfg, dict):
        raise C.WorkerError(C.TASK, f"{ypath}: expected a mapping at the top level")
    return ypath, cfg


def _inside_task_dir(tdir: str, name, what: str, ypath: str) -> str:
    """The path of `name` in the task folder; a name that leads outside it (absolute, `..`, or a
    symlink out) is refused, so a task file cannot make the worker read arbitrary files."""
    if not isinstance(name, str) or not name:
        raise C.WorkerError(C.TASK, f"{ypath}: `{what}` must be a file name in the task folder")
    root = os.path.realpath(tdir)
    path = os.path.realpath(os.path.join(root, name))
    if os.path.isabs(name) or os.path.commonpath([root, path]) != root:
        raise C.WorkerError(C.TASK, f"{ypath}: `{what}: {name}` points outside the task folder "
                                    f"{root}; refusing it")
    return path


MAXKERNEL_REFERENCE = "reference.py"  # beside kernel_task.yaml, as MaxKernel ships its tasks
MAXKERNEL_CANDIDATE = "optimized.py"  # what MaxKernel's harness evaluates against it


def _maxkernel(task: dict) -> Task:
    ypath, cfg = load_kernel_task_yaml(task)
    tdir = os.path.dirname(ypath)
    ref_file = cfg.get("reference", MAXKERNEL_REFERENCE)
    if not ref_file or not isinstance(ref_file, str):
        raise C.WorkerError(C.TASK, f"{ypath}: `reference` must name the reference .py file")
    ref_path = _inside_task_dir(tdir, ref_file, "reference", ypath)
    src = _read(ref_path, "reference file")
    mod = C.UserModule(src, ref_path, extra_path=tdir, role="reference").run()
    gen_mod = None
    try:
        inputs_name = cfg.get("inputs") or "get_inputs"
        comp_name = cfg.get("computation") or "computation"
        if mod.get(inputs_name) is None and not cfg.get("inputs") and \
                isinstance(cfg.get("input_gen_code"), str):
            # MaxKernel's harness runs the YAML's input_gen_code; reference.py usually repeats
            # it, and is preferred (its own imports and line numbers) when it does.
            gen_mod = _input_gen_module(cfg["input_gen_code"], ypath, tdir)
            inputs_fn = _require_callable(gen_mod, inputs_name, "inputs function")
        else:
            inputs_fn = _require_callable(mod, inputs_name, "inputs function")
        ref_fn = _require_callable(mod, comp_name, "reference function")
        tol = parse_tolerances({"rtol": cfg.get("rtol"), "atol": cfg.get("atol")}, ypath)
        cand_src = cand_name = None
        if cfg.get("candidate"):
            cand_name = _inside_task_dir(tdir, cfg["candidate"], "candidate", ypath)
            if os.path.exists(cand_name):
                cand_src = _read(cand_name, "candidate")
        elif os.path.isfile(os.path.join(tdir, MAXKERNEL_CANDIDATE)):
            cand_name = os.path.join(tdir, MAXKERNEL_CANDIDATE)
            cand_src = _read(cand_name, "candidate")
        resolved = Task(form="maxkernel", ref_module=mod, reference_fn=ref_fn, inputs_fn=inputs_fn,
                        inputs_name=inputs_name, reference_name=comp_name,
                        default_entry=cfg.get("entry") or comp_name, tolerances=tol, task_dir=tdir,
                        candidate_source=cand_src, candidate_filename=cand_name,
                        description=cfg.get("name") or cfg.get("task_id") or cfg.get("description"),
                        inputs_convention="dynamic_static")
        if gen_mod is not None:
            resolved.extra_modules.append(gen_mod)
            resolved.inputs_module = gen_mod
        # Inputs may come from the YAML: a changed YAML must not reuse a cached reference.
        resolved.cache_salt = _read(ypath, "kernel_task.yaml")
        return resolved
    except BaseException:
        mod.close()
        if gen_mod is not None:
            gen_mod.close()
        raise


def _input_gen_module(code: str, ypath: str, tdir: str) -> C.UserModule:
    """The YAML's input_gen_code as a module, run the way MaxKernel's harness runs it (with
    `jax` and `jax.numpy as jnp` already imported); errors point at the YAML's lines."""
    text = _read(ypath, "kernel_task.yaml")
    tree = C.parse_source(code, ypath)
    m = re.search(r"^input_gen_code:[ \t]*[|>]", text, re.MULTILINE)
    if m:
        ast.increment_lineno(tree, text.count("\n", 0, m.start()) + 1)
    gen = C.UserModule(text, ypath, tree=tree, extra_path=tdir, role="reference")
    gen.ns.update(jax=jax, jnp=jnp)
    return gen.run()


def _infile(task: dict, request_source, request_filename) -> Task:
    frozen = True
    if task.get("source") is not None:
        src = task["source"]
        fname = task.get("filename") or request_filename or "<task>"
    elif task.get("path"):
        fname = os.path.abspath(task["path"])
        src = _read(fname, "task file")
    else:
        # The buffer is its own task: nothing froze the reference.
        if request_source is None:
            raise C.WorkerError(C.BAD_REQUEST, "infile task without `source`/`path` needs request.source")
        src, fname, frozen = request_source, request_filename or "<buffer>", False
    task_dir = os.path.dirname(fname) if os.path.isabs(fname) else None
    mod = C.UserModule(src, fname, extra_path=task_dir, role="reference").run()
    try:
        ref_name = task.get("reference", "reference")
        inputs_name = task.get("inputs", "make_inputs")
        ref_fn = _require_callable(mod, ref_name, "reference function")
        inputs_fn = _require_callable(mod, inputs_name, "inputs function")
        tol = parse_tolerances(mod.get("TOLERANCES"), os.path.basename(fname))
        return Task(form="infile", ref_module=mod, reference_fn=ref_fn, inputs_fn=inputs_fn,
                    inputs_name=inputs_name, reference_name=ref_name,
                    default_entry=task.get("entry", "candidate"), tolerances=tol, task_dir=task_dir,
                    reference_frozen=frozen)
    except BaseException:
        mod.close()
        raise


# ---------------------------------------------------------------------------
# Candidate modules and parameter substitution (autotune).

def substitute_params(tree: ast.Module, params: dict) -> tuple[ast.Module, list[str]]:
    """Rewrites module-level constants and TUNED_PARAMS entries in place.

    A name assigned at module level (`BLOCK = 128`) gets its value replaced;
    any other parameter becomes a TUNED_PARAMS key, set right after the
    module's last TUNED_PARAMS assignment.  Returns the tree and the names
    that could not be placed anywhere.
    """
    if not params:
        return tree, []
    remaining = dict(params)
    last_tuned = None
    for i, node in enumerate(tree.body):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            targets = [node.target]
        for t in targets:
            if isinstance(t, ast.Name):
                if t.id == "TUNED_PARAMS":
                    last_tuned = i
                elif t.id in params and isinstance(node, (ast.Assign, ast.AnnAssign)):
                    node.value = ast.copy_location(_literal(params[t.id]), node.value)
                    remaining.pop(t.id, None)
    unplaced = []
    if remaining:
        if last_tuned is None:
            unplaced = list(remaining)
        else:
            anchor = tree.body[last_tuned]
            stmt = ast.parse(f"TUNED_PARAMS.update({remaining!r})").body[0]
            for n in ast.walk(stmt):
                ast.copy_location(n, anchor)
                n.end_lineno = getattr(anchor, "end_lineno", anchor.lineno)
            tree.body.insert(last_tuned + 1, stmt)
    ast.fix_missing_locations(tree)
    return tree, unplaced


def _literal(value):
    try:
        node = ast.parse(repr(value), mode="eval").body
        ast.literal_eval(node)
        return node
    except (SyntaxError, ValueError):
        raise C.WorkerError(C.BAD_REQUEST, f"autotune value {value!r} is not a Python literal") from None


def load_candidate(source: str, filename: str, task: Task, *, params: dict | None = None) -> C.UserModule:
    tree = C.parse_source(source, filename)
    if params:
        tree, unplaced = substitute_params(tree, params)
        if unplaced:
            raise C.WorkerError(
                C.TASK,
                f"parameter(s) {', '.join(unplaced)} are neither module-level constants nor "
                f"TUNED_PARAMS keys (the module has no TUNED_PARAMS dict)")
    extra = os.path.dirname(filename) if os.path.isabs(filename) else task.task_dir
    return C.UserModule(source, filename, tree=tree, extra_path=extra, role="candidate").run()


def candidate_entry(mod: C.UserModule, task: Task, kernel: str | None):
    name = kernel or task.default_entry
    if "." in name:  # Class.method or obj.attr
        head, *rest = name.split(".")
        obj = mod.get(head)
        for part in rest:
            obj = getattr(obj, part, None) if obj is not None else None
        fn = obj
    else:
        fn = mod.get(name)
    if fn is None:
        hint = "" if kernel else (
            " (pass `kernel` in the request or define it)" if task.form == "infile" else "")
        raise C.WorkerError(C.TASK, f"{os.path.basename(mod.filename)} defines no entry `{name}`{hint}")
    if not callable(fn):
        raise C.WorkerError(C.TASK, f"entry `{name}` is not callable")
    return name, fn
