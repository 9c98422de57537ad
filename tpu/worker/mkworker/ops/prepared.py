"""What every op starts from: the request's task and candidate, gated (sandbox.gate) before a line
of either runs, then loaded; and the request fields several ops read (seeds, hardware)."""

from __future__ import annotations

import os

from mkworker import common as C
from mkworker.judge import clock, run
from mkworker.sandbox import gate
from mkworker.tasks import tasks


class Prepared:
    def __init__(self, req: dict, params: dict | None = None, task: tasks.Task | None = None,
                 watch: clock.Watch | None = None):
        self.modules = []
        self.own_task = task is None
        # Started before any candidate code (an in-file task file is candidate code too) runs.
        self.watch = watch or clock.Watch(req.get("filename") or "<buffer>")
        if task is None:
            gate_task(req)
        src = req.get("source")
        if src is not None and not isinstance(src, str):
            raise C.WorkerError(C.BAD_REQUEST, "`source` must be a string")
        fname = req.get("filename") or "<buffer>"
        if "task" not in req and task is None:
            raise C.WorkerError(C.BAD_REQUEST, "request needs a `task`")
        self.task = task or tasks.resolve(req["task"], src, fname)
        if src is None:
            src, fname = self.task.candidate_source, self.task.candidate_filename
        if src is None:
            self.close()
            raise C.WorkerError(C.BAD_REQUEST,
                                "request needs `source` (the candidate text) or a task that names a candidate")
        self.source, self.filename = src, fname
        self.params = params
        try:
            gate_candidate(src, fname, self.task)
            self.cand = tasks.load_candidate(src, fname, self.task, params=params)
            self.modules.append(self.cand)
            self.watch.check("executing the module")
            self.entry_name, self.entry = tasks.candidate_entry(self.cand, self.task, req.get("kernel"))
        except BaseException:
            self.close()
            raise

    def close(self):
        for m in self.modules:
            m.close()
        self.modules = []
        if self.own_task and getattr(self, "task", None) is not None:
            self.task.close()


def gate_task(req: dict) -> None:
    """An in-file task is the candidate's own file (the editor's saved buffer, or the buffer
    itself): its text runs as the task module, so it is gated like a candidate."""
    t = req.get("task")
    if not isinstance(t, dict) or t.get("form") != "infile":
        return
    if isinstance(t.get("source"), str):
        text, fname = t["source"], t.get("filename") or req.get("filename") or "<task>"
    elif isinstance(t.get("path"), str):
        fname = os.path.abspath(t["path"])
        try:
            with open(fname, encoding="utf-8") as f:
                text = f.read()
        except OSError:
            return  # resolving the task reports it
    elif isinstance(req.get("source"), str):
        text, fname = req["source"], req.get("filename") or "<buffer>"
    else:
        return
    gate.refuse_with_helpers(text, fname, os.path.dirname(fname) if os.path.isabs(fname) else None)


def gate_candidate(source: str, filename: str, task) -> None:
    ref_file = getattr(getattr(task, "ref_module", None), "filename", None)
    names = gate.task_module_names(ref_file) if task is not None and task.form != "infile" else ()
    folder = os.path.dirname(filename) if os.path.isabs(filename) else getattr(task, "task_dir", None)
    gate.refuse_with_helpers(source, filename, folder, task_modules=names)


def gate_request(req: dict) -> None:
    """What the worker checks of a request before a child loads anything: a task, the in-file
    task's text and the candidate's text through the gate (a refusal names the line)."""
    if not isinstance(req.get("task"), dict):
        raise C.WorkerError(C.BAD_REQUEST, "request needs a `task`")
    gate_task(req)
    src = req.get("source")
    if src is not None and not isinstance(src, str):
        raise C.WorkerError(C.BAD_REQUEST, "`source` must be a string")
    if isinstance(src, str):
        gate_candidate_text(src, req.get("filename") or "<buffer>", req["task"])


def gate_candidate_text(source: str, filename: str, task_req: dict) -> None:
    """The gate before the task is loaded (the judge never loads it): the candidate's folder
    and, for a task folder, the names of its modules (read, not imported)."""
    folder = os.path.dirname(filename) if os.path.isabs(filename) else None
    names = ()
    if isinstance(task_req, dict) and task_req.get("form") != "infile":
        for key in ("path", "reference_file", "task_dir", "dir"):
            v = task_req.get(key)
            if isinstance(v, str) and os.path.exists(v):
                names = gate.task_module_names(v if os.path.isfile(v) else os.path.join(v, "x.py"))
                folder = folder or (v if os.path.isdir(v) else os.path.dirname(v))
                break
    gate.refuse_with_helpers(source, filename, folder, task_modules=names)


def request_hardware(req):
    hw = req.get("hardware")
    if hw is None and isinstance(req.get("target"), dict):
        hw = req["target"]
    if hw is not None and not isinstance(hw, dict):
        raise C.WorkerError(C.BAD_REQUEST, "`hardware` must be an object {name, peak_flops_per_s, "
                                           "hbm_bandwidth_bytes_per_s}")
    return hw


def seeds_from(req, default_n):
    seeds = req.get("seeds")
    if seeds is not None:
        if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) for s in seeds):
            raise C.WorkerError(C.BAD_REQUEST, "`seeds` must be a non-empty list of integers")
        return [int(s) for s in seeds]
    n = int(req.get("num_seeds", default_n))
    if n < 1:
        raise C.WorkerError(C.BAD_REQUEST, "num_seeds must be >= 1")
    return run.fresh_seeds(n)
