#!/usr/bin/env python3
"""Load bench: the real maxkernel-lsp under a long editing session with background jobs.

For `--seconds` (default 600) the bench, over stdio, against 50 open documents:
  * types at `--keys-per-second` (default 10): incremental didChange edits, bursts spread over the
    documents (workload.py);
  * keeps `--jobs` (default 4) background jobs running on the documents that carry a task:
    maxkernel.test, maxkernel.profile and maxkernel.optimizeAuto (a small budget) in turn, each
    restarted when its `$/progress` ends;
  * issues codeLens, hover and inlayHint requests at `--requests-per-second` (default 6, mostly on
    the document being typed in), without waiting for one before sending the next;
  * samples the server's VmRSS, its threads, its worker processes and the load average every
    `--sample-every` seconds.
It measures the latency of each request (send -> reply) and of didChange -> the
publishDiagnostics that covers its version, checks that every request got exactly one reply and
that progress tokens begin and end in pairs, and compares the server's RSS in the first warm
minute with the last minute. Writes bench/out/load.json and prints a summary. See README.md.
"""
import argparse
import datetime
import hashlib
import json
import os
import platform
import random
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))  # the shared LSP client: tests/lsp_client
import proc_stats  # noqa: E402
import workload  # noqa: E402
from lsp_client import Connection, ProtocolError, clock, collector_paused  # noqa: E402
import report as report_mod  # noqa: E402
from report import SHORT, print_summary, summarize  # noqa: E402

INTERACTIVE = ("textDocument/codeLens", "textDocument/hover", "textDocument/inlayHint")
STATUS = "maxkernel/status"  # the server's own memory account, sampled with the RSS
JOB_KINDS = ("maxkernel.test", "maxkernel.profile", "maxkernel.optimizeAuto")

CAPABILITIES = {
    "workspace": {"applyEdit": True, "configuration": True, "workspaceFolders": True,
                  "workspaceEdit": {"documentChanges": True},
                  "inlayHint": {"refreshSupport": True}, "codeLens": {"refreshSupport": True}},
    "window": {"workDoneProgress": True, "showDocument": {"support": True}, "showMessage": {}},
    "general": {"positionEncodings": ["utf-16"]},
    "textDocument": {"synchronization": {"didSave": True}, "hover": {"contentFormat": ["markdown", "plaintext"]},
                     "codeLens": {}, "inlayHint": {}, "publishDiagnostics": {"versionSupport": True}},
}


def default_binary():
    """build/bin unless build-lead's binary is newer (build/ is not always rebuilt)."""
    candidates = [ROOT / "build" / "bin" / "maxkernel-lsp", ROOT / "build-lead" / "bin" / "maxkernel-lsp"]
    existing = [p for p in candidates if p.exists()]
    return str(max(existing, key=lambda p: p.stat().st_mtime)) if existing else str(candidates[0])


class Job:
    def __init__(self, slot, kind, doc, rid, t0):
        self.slot, self.kind, self.doc, self.rid, self.t0 = slot, kind, doc, rid, t0
        self.token = None
        self.ended_at = None
        self.last_message = None


class Bench:
    def __init__(self, args, conn, docs):
        self.args, self.conn, self.docs = args, conn, docs
        self.rng = random.Random(args.seed + 1)
        self.typist = workload.Typist(docs, args.seed)
        self.t_start = None
        # request id -> (method, send time); replies counted per id
        self.sent = {}
        self.replies = {}
        self.unknown_replies = []
        self.samples = {m: [] for m in INTERACTIVE}  # (time since start, latency s, ok)
        self.errors = {m: {} for m in INTERACTIVE}
        self.results = {m: {"null": 0, "items": 0} for m in INTERACTIVE}
        # uri -> [(version, send time)] not yet covered by a publishDiagnostics
        self.unpublished = {d.uri: [] for d in docs}
        self.change_samples = []  # (time since start, latency s, coalesced)
        self.publishes = 0
        # progress: token -> list of kinds seen; tokens the server created
        self.progress = {}
        self.progress_after_end = []
        self.progress_log = {}  # token -> [[time since start, kind, message]]
        self.created_tokens = set()
        self.server_requests = {}
        self.jobs = {}  # slot -> Job
        self.job_by_rid = {}
        self.job_by_token = {}
        self.finished_jobs = []
        self.job_errors = []
        self.task_docs = [d for d in docs if d.has_task]
        self.job_turn = 0
        # (time since start, VmRSS KiB, threads, workers, workers RSS KiB, loadavg1, main thread's
        # run ns, its run-queue wait ns)
        self.rss = []
        # (time since start, the server's own maxkernel/status: heap in use, SQLite bytes, jobs)
        self.status = []
        self.keystrokes = 0

    # ----- messages from the server --------------------------------------------------------
    def server_request(self, msg):
        method = msg["method"]
        self.server_requests[method] = self.server_requests.get(method, 0) + 1
        if method == "window/workDoneProgress/create":
            self.created_tokens.add(json.dumps(msg["params"]["token"]))
        if method == "workspace/configuration":
            return [None for _ in msg.get("params", {}).get("items", [])]
        return None

    def handle(self, t, msg):
        if "method" in msg:
            if "id" in msg:
                return  # a server request, answered already
            if msg["method"] == "textDocument/publishDiagnostics":
                self.on_diagnostics(t, msg["params"])
            elif msg["method"] == "$/progress":
                self.on_progress(t, msg["params"])
            return
        rid = msg.get("id")
        if rid not in self.sent:
            self.unknown_replies.append(msg)
            return
        self.replies[rid] = self.replies.get(rid, 0) + 1
        if self.replies[rid] > 1:
            return
        method, t0 = self.sent[rid]
        if method in INTERACTIVE:
            ok = "error" not in msg
            self.samples[method].append((t0 - self.t_start, t - t0, ok))
            if not ok:
                code = str(msg["error"].get("code"))
                self.errors[method][code] = self.errors[method].get(code, 0) + 1
            else:
                result = msg.get("result")
                self.results[method]["null" if not result else "items"] += 1
        elif rid in self.job_by_rid:
            self.on_job_reply(t, self.job_by_rid.pop(rid), msg)
        elif method == STATUS:
            self.status.append((t0 - self.t_start, msg.get("result") or {}))

    def on_diagnostics(self, t, params):
        self.publishes += 1
        version = params.get("version")
        waiting = self.unpublished.get(params["uri"])
        if version is None or not waiting:
            return
        while waiting and waiting[0][0] <= version:
            v, t0 = waiting.pop(0)
            self.change_samples.append((t0 - self.t_start, t - t0, v < version))

    def on_progress(self, t, params):
        token = json.dumps(params["token"])
        value = params.get("value", {})
        kinds = self.progress.setdefault(token, [])
        if "end" in kinds:
            self.progress_after_end.append(token)
        kinds.append(value.get("kind"))
        self.progress_log.setdefault(token, []).append(
            [round(t - self.t_start, 2) if self.t_start else None, value.get("kind"), value.get("message")])
        job = self.job_by_token.get(token)
        if job is not None:
            job.last_message = value.get("message") or job.last_message
            if value.get("kind") == "end":
                job.ended_at = t
                self.finish_job(job)

    # ----- background jobs -----------------------------------------------------------------
    def start_job(self, slot, now):
        kind = JOB_KINDS[self.job_turn % len(JOB_KINDS)]
        self.job_turn += 1
        busy = {j.doc.uri for j in self.jobs.values()}
        doc = self.rng.choice([d for d in self.task_docs if d.uri not in busy])
        rid, t0 = self.conn.send_request("workspace/executeCommand", {
            "command": kind, "arguments": [{"uri": doc.uri, "kernel": 0, "version": doc.version}]})
        self.sent[rid] = ("workspace/executeCommand", t0)
        job = Job(slot, kind, doc, rid, t0)
        self.jobs[slot] = job
        self.job_by_rid[rid] = job

    def on_job_reply(self, t, job, msg):
        if "error" in msg:
            self.job_errors.append({"kind": job.kind, "error": msg["error"]})
            job.ended_at = t
            self.finish_job(job, failed=True)
            return
        job.token = json.dumps(msg["result"]["progressToken"])
        self.job_by_token[job.token] = job
        if "end" in self.progress.get(job.token, []):  # progress overtook the reply
            job.ended_at = t
            self.finish_job(job)

    def finish_job(self, job, failed=False):
        if self.jobs.get(job.slot) is not job:
            return
        del self.jobs[job.slot]
        self.finished_jobs.append({"kind": job.kind, "doc": job.doc.name, "started_s": job.t0 - self.t_start,
                                   "seconds": job.ended_at - job.t0, "failed": failed,
                                   "last_message": job.last_message})
        # A refused job is retried a second later, not in a tight loop.
        self.restart_at[job.slot] = clock() + (1.0 if failed else 0.0)

    # ----- the session ---------------------------------------------------------------------
    def keystroke(self):
        doc, params = self.typist.keystroke()
        t0 = self.conn.notify("textDocument/didChange", params)
        self.unpublished[doc.uri].append((doc.version, t0))
        self.keystrokes += 1

    def interactive_request(self):
        method = INTERACTIVE[self.rng.randrange(3)]
        doc = self.typist.current if self.typist.current and self.rng.random() < 0.7 else self.rng.choice(self.docs)
        params = {"textDocument": {"uri": doc.uri}}
        if method == "textDocument/hover":
            line, ch = self.rng.choice(doc.call_positions())
            params["position"] = {"line": line, "character": ch}
        elif method == "textDocument/inlayHint":
            line, _ = self.rng.choice(doc.call_positions())
            start = max(0, line - self.rng.randrange(5, 40))
            params["range"] = {"start": {"line": start, "character": 0},
                               "end": {"line": min(len(doc.lines) - 1, start + 60), "character": 0}}
        rid, t0 = self.conn.send_request(method, params)
        self.sent[rid] = (method, t0)

    def sample(self):
        st = proc_stats.status(self.conn.proc.pid)
        if st is None:
            raise ProtocolError("the server exited during the run; stderr tail:\n"
                                + "".join(self.conn.stderr_lines[-15:]))
        workers, workers_rss = proc_stats.descendants(self.conn.proc.pid)
        load1 = float(open("/proc/loadavg").read().split()[0])
        self.rss.append((clock() - self.t_start, st["VmRSS"], st["Threads"], workers, workers_rss, load1,
                         st.get("main_run_ns"), st.get("main_wait_ns")))
        rid, t0 = self.conn.send_request(STATUS, {})
        self.sent[rid] = (STATUS, t0)

    def drain(self, until):
        while self.conn.inbox:
            self.handle(*self.conn.inbox.popleft())
        self.conn.pump(max(0.0, until - clock()))
        while self.conn.inbox:
            self.handle(*self.conn.inbox.popleft())

    def run(self):
        a = self.args
        self.t_start = now = clock()
        end = now + a.seconds
        key_every, req_every = 1.0 / a.keys_per_second, 1.0 / a.requests_per_second
        next_key, next_req, next_sample = now, now + req_every / 2, now
        self.restart_at = {slot: now + slot * 0.5 for slot in range(a.jobs)}
        while True:
            now = clock()
            if now >= end:
                break
            if now >= next_sample:
                self.sample()
                next_sample += a.sample_every
            if now >= next_key:
                self.keystroke()
                next_key = max(next_key + key_every, now - key_every)  # no catch-up burst
            if now >= next_req:
                self.interactive_request()
                next_req = max(next_req + req_every, now - req_every)
            for slot, at in list(self.restart_at.items()):
                if slot not in self.jobs and now >= at:
                    del self.restart_at[slot]
                    self.start_job(slot, now)
            self.drain(min(next_key, next_req, next_sample, end, *self.restart_at.values()))
        self.sample()
        return self.wind_down()

    def wind_down(self):
        """Lets running jobs finish (cancelling those still running after --drain-seconds) and
        waits for every outstanding reply and diagnostics."""
        a = self.args
        t_end = clock()
        deadline = t_end + a.drain_seconds
        while self.jobs and clock() < deadline:
            self.drain(deadline)
        cancelled = []
        for job in list(self.jobs.values()):
            if job.token is not None:
                self.conn.notify("window/workDoneProgress/cancel", {"token": json.loads(job.token)})
                cancelled.append(job.kind)
        deadline = clock() + a.timeout
        while (self.jobs or self.missing_replies()) and clock() < deadline:
            self.drain(deadline)
        return {"measured_s": t_end - self.t_start, "wind_down_s": clock() - t_end,
                "jobs_cancelled_at_end": cancelled, "jobs_still_running": [j.kind for j in self.jobs.values()]}

    def missing_replies(self):
        return [rid for rid in self.sent if rid not in self.replies]


def run_interleaved(conn, docs, rounds, timeout):
    """Before the typing starts: `rounds` x (codeLens, then hover on a pallas_call) on the largest
    document, each request waited for, so a latency that grows with the requests served shows
    without the noise of the session. Returns {"codeLens": [s...], "hover": [s...]}."""
    doc = max(docs, key=lambda d: len(d.text_at_open))
    calls = doc.call_positions()
    out = {"codeLens": [], "hover": []}
    for i in range(rounds):
        line, ch = calls[i % len(calls)]
        for method, params in (("textDocument/codeLens", {"textDocument": {"uri": doc.uri}}),
                               ("textDocument/hover", {"textDocument": {"uri": doc.uri},
                                                       "position": {"line": line, "character": ch}})):
            rid, t0 = conn.send_request(method, params)
            t1, m = conn.wait_stamped(lambda m, rid=rid: m.get("id") == rid and "method" not in m, timeout,
                                      f"response to {method}")
            if "error" in m:
                raise ProtocolError(f"{method} failed: {m['error']}")
            out[SHORT[method]].append(t1 - t0)
    return out


def start_server(args, binary, work):
    env = dict(os.environ)
    env["MAXKERNEL_STORE"] = str(work / "store.sqlite")
    env["MAXKERNEL_WORKER_DIR"] = str(ROOT / "tpu" / "worker")  # the binary runs from a copy
    holder = {}
    conn = Connection([str(binary), "--log-level", args.log_level], cwd=work, env=env, timeout=args.timeout,
                      on_server_request=lambda msg: holder["bench"].server_request(msg) if "bench" in holder else None)
    return conn, holder


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=os.environ.get("MAXKERNEL_LSP") or default_binary(),
                    help="maxkernel-lsp to load (copied to a temp dir first); default $MAXKERNEL_LSP, else the "
                    "newer of build/ and build-lead/")
    ap.add_argument("--python", default=str(ROOT / ".venv" / "bin" / "python"), help="python with JAX for jobs")
    ap.add_argument("--seconds", type=float, default=600.0)
    ap.add_argument("--warmup", type=float, default=60.0, help="seconds before the server counts as warm")
    ap.add_argument("--docs", type=int, default=50)
    ap.add_argument("--task-docs", type=int, default=10, help="documents with an in-file task")
    ap.add_argument("--lines", type=int, default=400, help="lines per generated module")
    ap.add_argument("--keys-per-second", type=float, default=10.0)
    ap.add_argument("--requests-per-second", type=float, default=6.0, help="codeLens+hover+inlayHint")
    ap.add_argument("--jobs", type=int, default=4, help="background jobs kept running")
    ap.add_argument("--auto-iterations", type=int, default=1, help="Auto's maxIterations budget")
    ap.add_argument("--interleaved", type=int, default=200,
                    help="codeLens+hover rounds before the session, checked for a growing tail")
    ap.add_argument("--sample-every", type=float, default=2.0)
    ap.add_argument("--drain-seconds", type=float, default=120.0, help="wait for jobs after the run")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--goal-ms", type=float, default=50.0, help="p99 goal for interactive requests")
    ap.add_argument("--rss-growth-tolerance", type=float, default=report_mod.RSS_GROWTH_TOLERANCE,
                    help="RSS growth goal once warm (a ratio: 0.05 is 5%%)")
    ap.add_argument("--log-level", default="warn", help="the server's --log-level")
    ap.add_argument("--keep-dir", help="copy the work dir (store, documents) and the server's stderr here")
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "load.json"))
    args = ap.parse_args()
    if args.task_docs < args.jobs or args.docs < args.task_docs:
        ap.error("need --docs >= --task-docs >= --jobs")

    docs = workload.generate_documents(args.seed, args.docs, args.task_docs, args.lines)
    load_before = open("/proc/loadavg").read().split()[:3]
    with tempfile.TemporaryDirectory(prefix="mk_load_") as tmp:
        work = Path(tmp)
        binary = work / "maxkernel-lsp"
        shutil.copy2(args.binary, binary)  # others may rebuild it while we run
        binary_sha = hashlib.sha256(binary.read_bytes()).hexdigest()
        binary_mtime = binary.stat().st_mtime  # of the copy: the source may be rebuilt meanwhile
        for d in docs:
            path = work / d.name
            path.write_text(d.text_at_open)
            d.uri = path.as_uri()
        conn, holder = start_server(args, binary, work)
        bench = Bench(args, conn, docs)
        holder["bench"] = bench
        try:
            rid, _ = conn.send_request("initialize", {
                "processId": os.getpid(), "rootUri": work.as_uri(), "capabilities": CAPABILITIES,
                "workspaceFolders": [{"uri": work.as_uri(), "name": "load"}],
                "initializationOptions": {"python": args.python, "lowerOnSave": False,
                                          "budget": {"maxIterations": args.auto_iterations, "patience": 1}}})
            init = conn.wait_response(rid, args.timeout, take=False)
            if "error" in init:
                raise ProtocolError(f"initialize failed: {init['error']}")
            conn.notify("initialized", {})
            for d in docs:
                conn.notify("textDocument/didOpen", {"textDocument": {
                    "uri": d.uri, "languageId": "python", "version": 1, "text": d.text_at_open}})
            t_open = clock()
            while any(not any(m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == d.uri
                              for _, m in conn.inbox) for d in docs):
                if clock() - t_open > args.timeout:
                    raise ProtocolError("not every document got diagnostics after didOpen")
                conn.pump(1.0)
            open_s = clock() - t_open
            conn.inbox.clear()
            with collector_paused():
                interleaved = run_interleaved(conn, docs, args.interleaved, args.timeout)
            run_info = bench.run()
            run_info["interleaved"] = interleaved
            rid, _ = conn.send_request("shutdown")
            bench.sent[rid] = ("shutdown", clock())
            deadline = clock() + args.timeout
            while rid not in bench.replies and clock() < deadline:
                bench.drain(deadline)
            conn.notify("exit")
            exit_code = conn.close_and_wait(args.timeout)
            while conn.inbox:
                bench.handle(*conn.inbox.popleft())
        except ProtocolError as e:
            print(f"load: {e}", file=sys.stderr)
            return 2
        finally:
            conn.kill()
            if args.keep_dir:
                shutil.copytree(work, args.keep_dir, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("maxkernel-lsp"))
                Path(args.keep_dir, "server.stderr").write_text("".join(conn.stderr_lines))

    report = summarize(args, bench, run_info)
    report.update({
        "benchmark": "load",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
                    "loadavg_before": load_before, "loadavg_after": open("/proc/loadavg").read().split()[:3]},
        "maxkernel_lsp": {"source": args.binary, "sha256": binary_sha,
                          "mtime": datetime.datetime.fromtimestamp(binary_mtime,
                                                                   datetime.timezone.utc).isoformat(timespec="seconds")},
        "open_all_s": open_s,
        "exit_code": exit_code,
        "slow_turn_warnings": [line.strip() for line in conn.stderr_lines if "slow main-loop turn" in line][:50],
        "stderr_lines": len(conn.stderr_lines),
        "stderr_tail": [line.rstrip("\n") for line in conn.stderr_lines[-20:]],
    })
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")
    print_summary(report)
    print(f"wrote {out}")
    # A failed check or a missed goal fails the bench (docs/reliability.md, the load row).
    missed = report_mod.failures(report)
    for reason in missed:
        print(f"load: FAILED: {reason}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
