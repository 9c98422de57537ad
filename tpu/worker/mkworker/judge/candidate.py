"""One candidate judged against a reference's answer (judge.judge.JudgeGolden): a fresh child
(sandbox.sandbox) loads, traces and exports it, and the judge decides from that data alone: the
child's first-line checks, the work the judge counts in the program exported for the target,
then the judge's own runs of the program, compared with the reference's outputs.

Shared by `evaluate` (which adds extra shapes and timing) and `autotune` (one candidate per
configuration: the same text with the configuration's constants, `params`)."""

from __future__ import annotations

import dataclasses

from mkworker import common as C
from mkworker.judge import judge as judging
from mkworker.judge import run
from mkworker.sandbox import sandbox

# The request fields a candidate's child reads.
CHILD_FIELDS = ("task", "source", "filename", "kernel", "shrink", "interpret_mode")


@dataclasses.dataclass
class Judged:
    res: dict  # the verdict so far (correct, failure, checks, work, run_mode, judge phases...)
    header: dict  # the child's answer
    facts: list  # its pallas_call facts (a first line: the candidate's own trace)
    mode: run.RunMode
    compiled: object = None  # the judge's compiled candidate program, once it ran
    ref: object = None  # the judge's compiled reference program (None when it could not compile)
    failure: dict | None = None

    @property
    def decided(self) -> bool:
        """True when a verdict came before the judge ran the program (nothing left to time)."""
        return self.compiled is None


def params_of(cfg) -> dict:
    """An autotune configuration as the child's `params`: names to plain literals only."""
    if not isinstance(cfg, dict) or not all(isinstance(k, str) and k.isidentifier() for k in cfg):
        raise C.WorkerError(C.BAD_REQUEST, "a configuration must map parameter names to values")
    for k, v in cfg.items():
        if not isinstance(v, (bool, int, float, str)):
            raise C.WorkerError(C.BAD_REQUEST, f"configuration value {k}={v!r} is not a number, bool or string")
    return dict(cfg)


def judge(fields: dict, golden: judging.JudgeGolden, plat: str, cancel, *, params: dict | None = None,
          lower_first: bool = False) -> Judged:
    """Runs the candidate's child and judges what it sent. `lower_first`: the child lowers for
    the target right after tracing and answers a failure there (`res["target_failure"]`) without
    running anything (autotune's compile check). Errors of the child's own (import, trace) are
    raised as WorkerError, as the child raised them."""
    gh = golden.header
    t_cand = judging.time.perf_counter()
    inputs, input_blobs = golden.inputs_for_candidate()
    request = dict({k: fields[k] for k in CHILD_FIELDS if k in fields}, role="candidate", inputs=inputs)
    if params:
        request["params"] = params_of(params)
    if lower_first:
        request["lower_first"] = True
    header, blobs = sandbox.run_child(request, cancel=cancel, blobs=input_blobs)
    t_cand = judging.elapsed(t_cand)
    judging.raise_error(header)
    facts = header.get("pallas_calls") if isinstance(header.get("pallas_calls"), list) else []
    res = {
        "entry": header.get("entry"),
        "task": gh.get("task"),
        "instance": gh.get("instance"),
        "seeds": golden.seeds,
        "pallas_kernels": [f.get("kernel") for f in facts if isinstance(f, dict)],
        "pallas_calls": facts,
        "warnings": list(gh.get("warnings") or []) + list(header.get("warnings") or []),
        "speedup": None,
        "timing": None,
        "judge": {"sandbox": header.get("sandbox"), "program_from": "exported", "reference_from": golden.origin,
                  "phases": {"candidate_child_s": round(t_cand, 4), "candidate_child": header.get("phases")}},
    }
    mode = run.RunMode.from_json(header.get("run_mode") or {"mode": "interpret", "interpret_kind": "hlo",
                                                                  "platform": plat})
    mode.platform = plat
    res["run_mode"] = mode.to_json()
    res["time_kind"] = mode.time_kind
    out = Judged(res, header, facts, mode)
    if isinstance(header.get("target_failure"), dict):
        res.update(correct=False, target_failure=header["target_failure"], checks=[])
        return out
    if _first_line(out, golden):
        return out
    ins = judging.input_avals(golden)
    tol, accept = golden.tolerances()
    try:
        if fields.get("interpret_mode") == "none":
            # The host's own choice: kernels that pass interpret=... themselves are plain XLA in
            # every program, so there is no kernel to find and no outside to count.
            work, failure = {"skipped": "interpret_mode none: the kernels pass interpret=... themselves"}, None
        else:
            work, failure = judging.judge_target(judging.blob(header.get("target_program"), blobs), golden,
                                                   ins, header.get("work"))
        res["work"] = dict(header.get("work") or {}, judge=work)
        if failure:
            return _fail(out, failure)
        t0 = judging.time.perf_counter()
        compiled = judging.candidate_callable(header, blobs, golden, plat)
    except judging.ShapeMismatch as e:
        seed = golden.seeds[0]
        return _fail(out, {"kind": "shape_mismatch", "seed": seed, "message": f"seed {seed}: {e}"})
    except judging.ProgramRefused as e:
        return _fail(out, {"kind": "refused", "rule": "exported-program", "message": str(e)})
    res["compile_s"] = {"candidate": judging.elapsed(t0), "reference": gh.get("compile_s")}
    ref = judging.reference_callable(golden, plat)
    try:
        checks, failure = judging.check(compiled, ref, golden, tol, plat, accept, cancel, facts)
    except C.WorkerError:
        raise
    except Exception as e:  # noqa: BLE001
        raise C.WorkerError(C.RUNTIME, f"the candidate's program failed while the judge ran it: "
                                       f"{str(e).splitlines()[0][:500] if str(e) else type(e).__name__}") from None
    res.update(checks=checks, correct=failure is None, failure=failure)
    res["judge"]["phases"]["judge_compile_and_checks_s"] = round(judging.elapsed(t0), 4)
    out.compiled, out.ref, out.failure = compiled, ref, failure
    return out


def _fail(out: Judged, failure: dict) -> Judged:
    out.res.update(correct=False, failure=failure, checks=[])
    out.failure = failure
    return out


def _first_line(out: Judged, golden) -> bool:
    """The child's own checks (the kernel gate, donated inputs, its work report): a verdict there
    only makes the candidate look worse, so it stands."""
    header, res = out.header, out.res
    checks = []
    if isinstance(header.get("donated"), dict):
        problem = str(header["donated"].get("message"))
        seed = golden.seeds[0]
        header["donated"].update(seed=seed, message=f"seed {seed}: {problem}")
        checks = [{"seed": seed, "ok": False, "kind": "input_mutated", "message": problem,
                   "runs": [{"order": "candidate_first", "ok": False, "kind": "input_mutated", "message": problem,
                             "input_problems": [problem], "outputs": []}]}]
    for first in (header.get("gate"), header.get("donated"), (header.get("work") or {}).get("verdict")):
        if first:
            res.update(correct=False, failure=first, checks=checks)
            out.failure = first
            if header.get("work"):
                res["work"] = header["work"]
            return True
    return False

