"""'Optimize step by step' (HITL) sessions through the real server binary: a scripted client answers
every question (window/showMessageRequest) and edit (workspace/applyEdit) the server sends."""
import json
import os
import queue
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from lsp_client import LspClient, apply_text_edits

ROOT = Path(__file__).resolve().parents[2]
KERNEL = ROOT / "tests" / "optimize" / "kernels" / "scale_rows.py"
PYTHON = os.environ.get("MAXKERNEL_TEST_PYTHON", str(ROOT / ".venv" / "bin" / "python"))


class Editor:
    """The scripted user: answers questions from a list of choices and applies accepted edits
    to its buffer (sending didChange before answering, as VS Code does)."""

    def __init__(self, client, uri, text):
        self.client, self.uri, self.text, self.version = client, uri, text, 1
        self.questions = queue.Queue()  # (message, actions) in the order the server asked
        self.answers = queue.Queue()    # callables(message, actions) -> answer or None
        self.edits = []                 # every applyEdit params received
        self.edit_answers = queue.Queue()  # True / False
        self.answer_before_change = False  # reply to applyEdit before sending the didChange
        self.shown = []                 # showDocument params
        client.server_requests["window/showMessageRequest"] = self._question
        client.server_requests["workspace/applyEdit"] = self._apply_edit
        client.server_requests["window/showDocument"] = self._show_document

    def _question(self, params):
        self.questions.put((params["message"], params["actions"]))
        try:
            choose = self.answers.get(timeout=60)
        except queue.Empty:
            return None
        return choose(params["message"], params["actions"])

    def _apply_edit(self, params):
        self.edits.append(params)
        try:
            accept = self.edit_answers.get(timeout=60)
        except queue.Empty:
            accept = False
        if not accept:
            return {"applied": False, "failureReason": "the user declined the preview"}
        (change,) = params["edit"]["documentChanges"]
        self.text = apply_text_edits(self.text, change["edits"])
        self.version += 1
        change = {"textDocument": {"uri": self.uri, "version": self.version},
                  "contentChanges": [{"text": self.text}]}
        if self.answer_before_change:
            # Some clients answer first and send the buffer's didChange afterwards.
            request_id = self.client.received_server_requests[-1]["id"]
            self.client.write({"jsonrpc": "2.0", "id": request_id, "result": {"applied": True}})
            self.client.notify("textDocument/didChange", change)
            return "NO_REPLY"
        self.client.notify("textDocument/didChange", change)
        return {"applied": True}

    def _show_document(self, params):
        self.shown.append(params)
        return {"success": True}

    def next_question(self, timeout=60):
        try:
            return self.questions.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(
                "no question from the server; stderr: " + "".join(self.client.stderr_lines[-20:]))


def pick(title, feedback=None, before=None):
    """An answer that picks the action with this title (and types feedback for it)."""
    def choose(message, actions):
        if before:
            before(message, actions)
        (action,) = [a for a in actions if a["title"] == title]
        answer = dict(action)
        if feedback is not None:
            assert action.get("feedback") is True
            answer["feedback"] = feedback
        return answer
    return choose


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    shutil.copy(KERNEL, tmp_path / "scale_rows.py")
    store = tmp_path / "store" / "store.sqlite"
    monkeypatch.setenv("MAXKERNEL_STORE", str(store))
    return tmp_path, store


# The autotune phase's summary when a configuration beats the kernel's own (scale_rows.py's
# BLOCK_ROWS = 8 on a CPU host: scored by the TPU model's prediction).
AUTOTUNED = (r"MaxKernel: Step 5/6 autotune: autotune: (?P<best>BLOCK_ROWS=\d+) at [\d.]+ .s predicted "
             r"\(model, v5e\) beats the kernel's own BLOCK_ROWS=8 at [\d.]+ .s predicted \(model, v5e\); "
             r"(?P<configs>\d+) configurations tried, (?P<cached>\d+) from the tuning cache; ")


def start_server(path):
    c = LspClient()
    c.initialize(options={"python": PYTHON})
    text = path.read_text()
    c.open(path.as_uri(), text)
    c.diagnostics(path.as_uri(), version=1)
    return c, Editor(c, path.as_uri(), text)


def begin_step_by_step(c, editor, path):
    """Starts a session on the open `path` and waits for the plan's question; returns the
    command's result."""
    resp = c.request("workspace/executeCommand", {
        "command": "maxkernel.optimizeStepByStep", "arguments": [{"uri": path.as_uri()}]})
    editor.next_question()
    return resp["result"]


def saved_session(store, session_id):
    db = sqlite3.connect(store)
    try:
        row = db.execute("SELECT phase, status, history_json, code, plan, proposed FROM hitl_sessions "
                         "WHERE id = ?", (session_id,)).fetchone()
    finally:
        db.close()
    assert row, f"session {session_id} not in {store}"
    return {"phase": row[0], "status": row[1], "history": json.loads(row[2]), "code": row[3],
            "plan": row[4], "proposed": row[5]}


def assert_only_changed_lines(before, edits):
    """Every edit covers whole lines of `before` and changes them: no unchanged line is
    rewritten, so an editor's preview shows only what the phase changed."""
    lines = before.splitlines(keepends=True)
    assert edits, "an edit with no changes"
    for e in edits:
        start, end = e["range"]["start"], e["range"]["end"]
        assert start["character"] == 0 and (end["character"] == 0 or end["line"] == len(lines) - 1), e
        old = "".join(lines[start["line"]:end["line"]]) if end["character"] == 0 else \
            "".join(lines[start["line"]:])
        assert old != e["newText"], e
        if old and e["newText"]:  # a replacement: its first line is a changed one
            assert old.splitlines()[0] != e["newText"].splitlines()[0], e


def untick_all_but_first(plan_file):
    lines = plan_file.read_text().splitlines(keepends=True)
    ticked = [i for i, l in enumerate(lines) if l.startswith("- [x] ")]
    assert len(ticked) >= 2, "".join(lines)
    for i in ticked[1:]:
        lines[i] = "- [ ] " + lines[i][len("- [x] "):]
    plan_file.write_text("".join(lines))
    return lines[ticked[0]][len("- [x] "):].strip()


def test_a_session_plans_revises_edits_survives_a_restart_and_stops(workspace):
    tmp, store = workspace
    path = tmp / "scale_rows.py"
    original = path.read_text()
    c, editor = start_server(path)
    try:
        resp = c.request("workspace/executeCommand", {
            "command": "maxkernel.optimizeStepByStep", "arguments": [{"uri": path.as_uri(), "kernel": 0}]})
        result = resp["result"]
        assert result["status"] == "started" and result["phase"] == "plan"
        session = result["session"]

        # Plan: written to sessions/<id>/plan.md and opened with focus.
        message, actions = editor.next_question()
        assert message.startswith("MaxKernel: Step 1/6 plan: ") and message.endswith("Next?")
        titles = [a["title"] for a in actions]
        assert titles[0] == "Approve" and titles[-1] == "Stop"
        assert {"Retry", "Skip", "Next phase: implement", "Next phase: profile"} <= set(titles)
        assert next(a for a in actions if a["title"] == "Revise with feedback")["feedback"] is True
        plan_file = store.parent / "sessions" / session / "plan.md"
        assert editor.shown and editor.shown[0]["uri"] == plan_file.as_uri()
        assert editor.shown[0]["takeFocus"] is True
        assert "- [x] " in plan_file.read_text()

        # Revise with feedback: the plan is made again with it, and the history records it.
        editor.answers.put(pick("Revise with feedback", feedback="prefer bigger row blocks"))
        message, _ = editor.next_question()
        assert message.startswith("MaxKernel: Step 1/6 plan: ")
        assert "> Your feedback: prefer bigger row blocks" in plan_file.read_text()
        history = saved_session(store, session)["history"]
        assert {"phase": "plan", "event": "feedback", "text": "prefer bigger row blocks"}.items() <= \
            next(h for h in history if h["event"] == "feedback").items()

        # The user keeps only the first strategy, then approves: implement uses the edited plan.
        kept = untick_all_but_first(plan_file)
        editor.edit_answers.put(False)  # the first edit is rejected in the preview
        editor.answers.put(pick("Approve"))
        message, _ = editor.next_question()
        assert message.startswith("MaxKernel: Step 2/6 implement: ")
        assert "rejected" in message and kept in message
        (first_edit,) = editor.edits
        (change,) = first_edit["edit"]["documentChanges"]
        assert change["textDocument"] == {"uri": path.as_uri(), "version": 1}
        edits = change["edits"]
        (annotation_id,) = {e["annotationId"] for e in edits}
        annotation = first_edit["edit"]["changeAnnotations"][annotation_id]
        assert annotation["needsConfirmation"] is True
        assert annotation["label"].startswith("MaxKernel: ")
        proposed = apply_text_edits(original, edits)
        assert proposed != original
        assert_only_changed_lines(original, edits)
        assert saved_session(store, session)["history"][-2]["event"] == "rejected"

        # Retry: the same proposal again; this time it is accepted and the buffer changes.
        editor.edit_answers.put(True)
        editor.answers.put(pick("Retry"))
        message, _ = editor.next_question()
        assert message.startswith("MaxKernel: Step 2/6 implement: ") and "edit applied" in message
        assert len(editor.edits) == 2
        assert editor.text == proposed and editor.version == 2
        saved = saved_session(store, session)
        assert saved["status"] == "awaiting" and saved["phase"] == "implement"
        assert saved["code"] == editor.text
        assert "- [ ] " in saved["plan"]  # the edited plan was read back
        # Close the editor with the question open.
        editor.answers.put(lambda m, a: None)
    finally:
        c.close()

    # A new server process on the same store: the session is listed and resumes where it was.
    path.write_text(editor.text)
    c2, editor2 = start_server(path)
    try:
        listed = c2.request("maxkernel/sessions")["result"]["sessions"]
        (entry,) = [s for s in listed if s["id"] == session]
        assert entry["kernel"] == "_kernel" and entry["uri"] == path.as_uri()
        assert entry["phase"] == "implement" and entry["status"] == "awaiting"
        assert entry["run"].startswith("r")
        resp = c2.request("workspace/executeCommand", {
            "command": "maxkernel.optimizeStepByStep", "arguments": [{"session": session, "uri": path.as_uri()}]})
        assert resp["result"]["status"] == "resumed" and resp["result"]["phase"] == "implement"
        message, _ = editor2.next_question()
        assert message.startswith("MaxKernel: Step 2/6 implement: ") and "edit applied" in message
        editor2.answers.put(pick("Stop"))
        c2.wait_notification("window/showMessage", lambda p: session in p["message"] and "stopped" in p["message"])
        listed = c2.request("maxkernel/sessions")["result"]["sessions"]
        assert next(s for s in listed if s["id"] == session)["status"] == "stopped"
        assert not editor2.edits
        events = [h["event"] for h in saved_session(store, session)["history"]]
        assert events[-2:] == ["resumed", "stopped"]
    finally:
        c2.close()


def test_the_implement_edit_carries_only_the_changed_lines(workspace):
    tmp, store = workspace
    path = tmp / "scale_rows.py"
    original = path.read_text()
    c, editor = start_server(path)
    try:
        session = begin_step_by_step(c, editor, path)["session"]
        editor.edit_answers.put(False)  # look at the preview, then decline it
        editor.answers.put(pick("Approve"))
        message, _ = editor.next_question()
        assert message.startswith("MaxKernel: Step 2/6 implement: ") and "rejected" in message
        (params,) = editor.edits
        (change,) = params["edit"]["documentChanges"]
        assert change["textDocument"] == {"uri": path.as_uri(), "version": 1}
        edits = change["edits"]
        assert_only_changed_lines(original, edits)
        covered = sum(e["range"]["end"]["line"] - e["range"]["start"]["line"] for e in edits)
        assert 0 < covered < len(original.splitlines()) // 2, edits
        # Applied in the editor, the edits give exactly the text the session proposed.
        proposed = saved_session(store, session)["proposed"]
        assert proposed and proposed != original
        assert apply_text_edits(original, edits) == proposed
        assert all(params["edit"]["changeAnnotations"][e["annotationId"]]["needsConfirmation"] for e in edits)
        editor.answers.put(pick("Stop"))
        c.wait_notification("window/showMessage", lambda p: "stopped" in p["message"])
    finally:
        c.close()


def test_an_edit_is_not_sent_when_the_document_moved(workspace):
    tmp, store = workspace
    path = tmp / "scale_rows.py"
    c, editor = start_server(path)
    try:
        session = begin_step_by_step(c, editor, path)["session"]

        def type_something(message, actions):
            editor.version += 1
            editor.text = "# edited while the session waited\n" + editor.text
            c.notify("textDocument/didChange", {
                "textDocument": {"uri": path.as_uri(), "version": editor.version},
                "contentChanges": [{"text": editor.text}]})

        editor.answers.put(pick("Approve", before=type_something))
        message, _ = editor.next_question()
        assert message.startswith("MaxKernel: Step 2/6 implement: edit not sent")
        warning = c.wait_notification("window/showMessage", lambda p: "not sent" in p["message"])
        assert warning["type"] == 2 and "version 1, now 2" in warning["message"]
        assert editor.edits == []

        # Retry re-reads the document and proposes against version 2.
        editor.edit_answers.put(False)
        editor.answers.put(pick("Retry"))
        message, _ = editor.next_question()
        assert "rejected" in message
        (edit,) = editor.edits
        change = edit["edit"]["documentChanges"][0]
        assert change["textDocument"]["version"] == 2
        # Proposed against version 2: the line typed meanwhile stays, untouched by the edit.
        assert apply_text_edits(editor.text, change["edits"]).startswith("# edited while the session waited\n")
        assert all(e["range"]["start"]["line"] >= 1 for e in change["edits"])
        events = [h["event"] for h in saved_session(store, session)["history"]]
        assert "edit not sent" in events and "rebased" in events
        editor.answers.put(pick("Stop"))
        c.wait_notification("window/showMessage", lambda p: "stopped" in p["message"])
    finally:
        c.close()


def test_an_applied_answer_that_overtakes_its_did_change_keeps_the_proposal(workspace):
    tmp, store = workspace
    path = tmp / "scale_rows.py"
    c, editor = start_server(path)
    try:
        session = begin_step_by_step(c, editor, path)["session"]
        editor.answer_before_change = True
        editor.edit_answers.put(True)
        editor.answers.put(pick("Approve"))
        message, _ = editor.next_question()
        assert "edit applied" in message
        # The session's candidate is the applied proposal, not the text before the edit.
        assert saved_session(store, session)["code"] == editor.text
        # The next edit (autotune's move) goes out against the version the late didChange
        # brought, instead of being refused as if the user had typed.
        editor.edit_answers.put(False)
        editor.answers.put(pick("Next phase: autotune"))
        message, _ = editor.next_question(timeout=600)
        assert "not sent" not in message, message
        assert len(editor.edits) == 2, message
        change = editor.edits[-1]["edit"]["documentChanges"][0]
        assert change["textDocument"]["version"] == editor.version == 2
        editor.answers.put(pick("Stop"))
        c.wait_notification("window/showMessage", lambda p: "stopped" in p["message"])
    finally:
        c.close()


def test_bad_arguments_are_clear_errors(workspace):
    tmp, _ = workspace
    path = tmp / "scale_rows.py"
    c, _ = start_server(path)
    try:
        for args, words in [([{"session": "s-missing"}], "no session"),
                            ([{"uri": "file:///not/open.py"}], "not open"),
                            ([{"uri": path.as_uri(), "kernel": 7}], "no such kernel"),
                            ([{"uri": path.as_uri(), "kernel": "nope"}], "no kernel named 'nope'"),
                            (["text"], "expected")]:
            resp = c.request("workspace/executeCommand",
                             {"command": "maxkernel.optimizeStepByStep", "arguments": args})
            assert resp["error"]["code"] == -32602 and words in resp["error"]["message"], resp
    finally:
        c.close()


def test_the_test_phase_runs_the_candidate_and_reports_mk311(workspace):
    tmp, store = workspace
    path = tmp / "scale_rows.py"
    c, editor = start_server(path)
    try:
        session = begin_step_by_step(c, editor, path)["session"]
        editor.answers.put(pick("Next phase: test"))
        message, _ = editor.next_question(timeout=300)
        assert message.startswith("MaxKernel: Step 4/6 test: test on local: correct"), message
        # The scripted client reads on after its answer: the diagnostics went out with the question.
        editor.answers.put(pick("Stop"))
        diags = c.wait_notification(
            "textDocument/publishDiagnostics",
            lambda p: p["uri"] == path.as_uri() and any(d.get("code") == "MK311" for d in p["diagnostics"]))
        (verdict,) = [d for d in diags["diagnostics"] if d.get("code") == "MK311"]
        assert verdict["severity"] == 3 and verdict["source"] == "maxkernel"
        assert "correct" in verdict["message"]
        db = sqlite3.connect(store)
        run = db.execute("SELECT run_id FROM hitl_sessions WHERE id = ?", (session,)).fetchone()[0]
        statuses = [r[0] for r in db.execute("SELECT status FROM nodes WHERE run_id = ? ORDER BY id", (run,))]
        db.close()
        assert statuses == ["pending", "correct"]
        c.wait_notification("window/showMessage", lambda p: "stopped" in p["message"])
    finally:
        c.close()


def test_all_six_phases_with_real_jax_end_in_done(workspace):
    tmp, store = workspace
    path = tmp / "scale_rows.py"
    c, editor = start_server(path)
    try:
        session = begin_step_by_step(c, editor, path)["session"]
        editor.answers.put(pick("Next phase: validate"))
        message, _ = editor.next_question(timeout=300)
        assert message.startswith("MaxKernel: Step 3/6 validate: lowered for TPU on local: 1 pallas_call"), message
        editor.answers.put(pick("Approve"))
        message, _ = editor.next_question(timeout=300)
        assert message.startswith("MaxKernel: Step 4/6 test: test on local: correct"), message
        # Autotune: fewer, larger row blocks are predicted faster; the best configuration of the
        # derived space comes as an edit.
        editor.edit_answers.put(True)
        editor.answers.put(pick("Approve"))
        message, _ = editor.next_question(timeout=600)
        assert re.match(AUTOTUNED, message), message
        assert "edit applied" in message
        (edit,) = editor.edits
        assert edit["edit"]["documentChanges"][0]["textDocument"]["version"] == 1
        assert "BLOCK_ROWS = 8\n" not in editor.text and editor.version == 2
        editor.answers.put(pick("Approve"))
        message, _ = editor.next_question(timeout=300)
        assert message.startswith("MaxKernel: Step 6/6 profile: profile on local"), message
        plan_file = store.parent / "sessions" / session / "plan.md"
        assert "## Profile" in plan_file.read_text()
        editor.answers.put(pick("Approve"))
        c.wait_notification("window/showMessage", lambda p: session in p["message"] and "finished" in p["message"],
                            timeout=30)
        listed = c.request("maxkernel/sessions")["result"]["sessions"]
        assert next(s for s in listed if s["id"] == session)["status"] == "done"
        saved = saved_session(store, session)
        assert saved["code"] == editor.text
        approved = [h["phase"] for h in saved["history"] if h["event"] == "approved"]
        assert approved == ["validate", "test", "autotune", "profile"]
    finally:
        c.close()


def tuning_rows(store):
    db = sqlite3.connect(store)
    try:
        return db.execute("SELECT COUNT(*) FROM tuning_cache").fetchone()[0]
    finally:
        db.close()


def test_a_second_autotune_of_the_same_code_is_answered_by_the_tuning_cache(workspace):
    tmp, store = workspace
    path = tmp / "scale_rows.py"
    c, editor = start_server(path)
    try:
        begin_step_by_step(c, editor, path)
        editor.edit_answers.put(False)  # the code stays as it is for the second run
        editor.answers.put(pick("Next phase: autotune"))
        message, _ = editor.next_question(timeout=600)
        first = re.match(AUTOTUNED, message)
        assert first and "edit rejected" in message, message
        configs = int(first["configs"])
        assert configs >= 2 and first["cached"] == "0", message
        assert tuning_rows(store) == configs
        editor.edit_answers.put(False)
        editor.answers.put(pick("Retry"))
        message, _ = editor.next_question(timeout=600)
        second = re.match(AUTOTUNED, message)
        assert second, message
        # Every configuration from the cache: the worker tuned none of them again.
        assert second["configs"] == second["cached"] == str(configs), message
        assert second["best"] == first["best"], message
        assert tuning_rows(store) == configs
        editor.answers.put(pick("Stop"))
        c.wait_notification("window/showMessage", lambda p: "stopped" in p["message"])
    finally:
        c.close()


def test_autotune_runs_uncached_when_the_tuning_cache_cannot_open(workspace):
    tmp, store = workspace
    store.parent.mkdir()
    db = sqlite3.connect(store)  # knowledge tables from a newer build: that store refuses to open
    db.execute("CREATE TABLE component_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL)")
    db.execute("INSERT INTO component_schema VALUES ('knowledge', 999)")
    db.commit()
    db.close()
    path = tmp / "scale_rows.py"
    c, editor = start_server(path)
    try:
        begin_step_by_step(c, editor, path)
        editor.edit_answers.put(True)
        editor.answers.put(pick("Next phase: autotune"))
        message, _ = editor.next_question(timeout=600)
        assert message.startswith("MaxKernel: Step 5/6 autotune: autotune: BLOCK_ROWS="), message
        assert re.search(r"configurations tried, uncached \(.*newer than this build", message), message
        assert "edit applied" in message
        editor.answers.put(pick("Stop"))
        c.wait_notification("window/showMessage", lambda p: "stopped" in p["message"])
    finally:
        c.close()


def test_validate_maps_a_lowering_error_to_its_line_as_mk310(workspace):
    tmp, _ = workspace
    src = ROOT / "tests" / "worker" / "tasks" / "infile" / "bad_block.py"
    path = tmp / "bad_block.py"
    shutil.copy(src, path)
    c, editor = start_server(path)
    try:
        begin_step_by_step(c, editor, path)
        editor.answers.put(pick("Next phase: validate"))
        message, _ = editor.next_question(timeout=300)
        assert message.startswith("MaxKernel: Step 3/6 validate: lowering failed"), message
        editor.answers.put(pick("Stop"))
        diags = c.wait_notification(
            "textDocument/publishDiagnostics",
            lambda p: p["uri"] == path.as_uri() and any(d.get("code") == "MK310" for d in p["diagnostics"]))
        (error,) = [d for d in diags["diagnostics"] if d.get("code") == "MK310"]
        expected = next(i for i, l in enumerate(editor.text.splitlines()) if "PALLAS_CALL_LINE" in l)
        assert error["range"]["start"]["line"] == expected
        assert error["severity"] == 1 and error["source"] == "maxkernel"
        assert "divisible by 8 and 128" in error["message"]
    finally:
        c.close()


def test_cancelling_the_phase_progress_stops_its_host_work_and_asks(workspace):
    tmp, _ = workspace
    path = tmp / "scale_rows.py"
    c, editor = start_server(path)
    try:
        begin_step_by_step(c, editor, path)
        editor.answers.put(pick("Next phase: autotune"))
        begin = c.wait_notification(
            "$/progress", lambda p: p["value"]["kind"] == "begin" and "autotune" in p["value"]["title"], timeout=30)
        assert begin["value"]["cancellable"] is True
        c.notify("window/workDoneProgress/cancel", {"token": begin["token"]})
        message, _ = editor.next_question(timeout=120)
        assert message == "MaxKernel: Step 5/6 autotune: autotune cancelled. Next?"
        assert editor.edits == []
        editor.answers.put(pick("Stop"))
        end = c.wait_notification("$/progress", lambda p: p["token"] == begin["token"] and p["value"]["kind"] == "end")
        assert "cancelled" in end["value"]["message"]
    finally:
        c.close()


def test_an_editor_without_versioned_edits_gets_the_candidate_as_a_file(workspace):
    tmp, store = workspace
    path = tmp / "scale_rows.py"
    c = LspClient()
    caps = {"window": {"showMessage": {}}, "workspace": {}}
    c.initialize(capabilities=caps, options={"python": PYTHON})
    text = path.read_text()
    c.open(path.as_uri(), text)
    editor = Editor(c, path.as_uri(), text)
    try:
        session = begin_step_by_step(c, editor, path)["session"]
        assert editor.shown == []  # no showDocument support announced
        editor.answers.put(pick("Approve"))
        message, _ = editor.next_question()
        assert "cannot apply versioned edits" in message
        candidate = store.parent / "sessions" / session / "candidate.py"
        assert str(candidate) in message
        assert candidate.read_text() != text and "BLOCK_ROWS" in candidate.read_text()
        assert editor.edits == []
        editor.answers.put(pick("Stop"))
    finally:
        c.close()


def profile_first(path):
    """Starts a session on `path`, jumps from the plan to the profile and returns what the
    profile phase asked: (client, editor, session, message, action titles)."""
    c, editor = start_server(path)
    session = begin_step_by_step(c, editor, path)["session"]
    editor.answers.put(pick("Next phase: profile"))
    message, actions = editor.next_question(timeout=300)
    return c, editor, session, message, [a["title"] for a in actions]


def test_the_profile_phase_shows_the_diagnosis_and_suggests_autotune_for_a_re_fetch(workspace):
    tmp, store = workspace
    path = tmp / "matmul_refetch.py"
    shutil.copy(ROOT / "tests" / "optimize" / "kernels" / "matmul_refetch.py", path)
    c, editor, session, message, titles = profile_first(path)
    try:
        assert message.startswith("MaxKernel: Step 6/6 profile: profile on local"), message
        assert re.search(r"; HBM-bound \u00b7 \d+% of roofline\. Suggested next: autotune \(HBM-bound: "
                         r"args\[1\] re-fetched 8x along grid axis 0", message), message
        assert "larger blocks fetch args[1] fewer times" in message and message.endswith(" Next?")
        jumps = [t for t in titles if t.startswith("Next phase: ")]
        assert jumps[0] == "Next phase: autotune (suggested)", titles
        assert "Next phase: autotune" not in titles and titles[0] == "Approve"
        # The artifact: plan.md has the profile, the diagnosis in full and the suggestion.
        plan = (store.parent / "sessions" / session / "plan.md").read_text()
        assert re.search(r"### Diagnosis: HBM-bound \u00b7 \d+% of roofline\n", plan), plan
        assert "- re-fetched: args[1] of _matmul 8x along grid axis 0" in plan, plan
        assert re.search(r"- VMEM: [\d.]+ MiB per grid step of 16 MiB: [\d.]+ MiB headroom", plan), plan
        assert "### Suggested next: autotune\n" in plan, plan
        saved = saved_session(store, session)
        events = [h["event"] for h in saved["history"]]
        assert events[-3:] == ["diagnosis", "suggested", "result"], events
        assert json.loads(saved["history"][-3]["text"])["bound"] == "HBM"
        editor.answers.put(pick("Stop"))
        c.wait_notification("window/showMessage", lambda p: "stopped" in p["message"])
    finally:
        c.close()


def test_over_vmem_the_profile_suggests_a_plan_that_ticks_smaller_blocks(workspace):
    tmp, store = workspace
    # matmul_over_vmem at a quarter of its rows and columns (a quicker profile): one 256-row step
    # whose whole-K blocks, double-buffered, still need twice the scoped VMEM.
    src = (ROOT / "tests" / "optimize" / "kernels" / "matmul_over_vmem.py").read_text()
    small = src.replace("M, K, N = 1024, 8192, 1024", "M, K, N = 256, 8192, 256") \
               .replace("BLOCK_M = 512", "BLOCK_M = 256").replace("BLOCK_N = 512", "BLOCK_N = 256")
    assert small.count("256") >= 4
    path = tmp / "matmul_over_vmem.py"
    path.write_text(small)
    c, editor, session, message, titles = profile_first(path)
    try:
        # Close to the roofline by the model, but it does not fit: not "accept", a plan.
        assert "; over VMEM \u00b7 " in message and "Suggested next: plan (over the VMEM budget" in message, message
        assert "accumulator_f32, buffering, block_sizes and autotune" in message, message
        assert [t for t in titles if t.startswith("Next phase: ")][0] == "Next phase: plan (suggested)"
        plan_file = store.parent / "sessions" / session / "plan.md"
        assert re.search(r"- VMEM: 32.5 MiB per grid step of 16 MiB: 16.5 MiB over\n", plan_file.read_text())
        editor.answers.put(pick("Next phase: plan (suggested)"))
        message, _ = editor.next_question(timeout=120)
        assert message.startswith("MaxKernel: Step 1/6 plan: "), message
        plan = plan_file.read_text()
        assert "Ordered by the last profile's diagnosis: over the VMEM budget" in plan, plan
        ticked = [l for l in plan.splitlines() if l.startswith("- [x] ")]
        unticked = [l for l in plan.splitlines() if l.startswith("- [ ] ")]
        assert ticked and unticked, plan
        moves = [re.search(r" (\d+) -> (\d+)$", l) for l in ticked]
        assert all(m and int(m.group(2)) < int(m.group(1)) for m in moves), ticked
        assert all(int(m.group(2)) > int(m.group(1)) for m in
                   (re.search(r" (\d+) -> (\d+)$", l) for l in unticked) if m), unticked
        assert plan.rindex("- [x] ") < plan.index("- [ ] "), plan  # what answers it comes first
        editor.answers.put(pick("Stop"))
        c.wait_notification("window/showMessage", lambda p: "stopped" in p["message"])
    finally:
        c.close()
