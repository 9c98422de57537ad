"""'Debug this' in a step-by-step session: the test phase finds the kernel wrong (a NaN row), the
LLM debugger (the replay server over loopback, tests/optimize/fixtures/hitl_debug_nan_row_openai.json
from make_hitl_debug_chain.py) is sent the worker's correctness report, its fix is written to the
session's fix.py and shown; the user edits that file before 'Run the fix', and the edited file is
what the versioned edit applies and the test evaluates on a real JAX worker. A kernel that does
not lower gets the same choice with the worker's lowering error."""
import json
import sqlite3
import sys
from contextlib import contextmanager
from pathlib import Path

from lsp_client import LspClient
from test_hitl import PYTHON, Editor, pick, saved_session
from test_hitl_llm import Replay

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "optimize" / "fixtures"
sys.path.insert(0, str(FIXTURES))
import make_hitl_debug_chain as chain

KEY = "sk-hitl-debug-0123456789"


def sent_text(record):
    body = json.loads(record["body"])
    return "\n".join(m["content"] for m in body["messages"] if isinstance(m["content"], str))


@contextmanager
def in_test_phase(tmp_path, monkeypatch, fixture, name, text):
    """A server whose LLM is the replay endpoint on `fixture`, a session on `text` moved to its
    test phase; yields (editor, replay, store, the command's result)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    store = tmp_path / "store" / "store.sqlite"
    monkeypatch.setenv("MAXKERNEL_STORE", str(store))
    path = tmp_path / name
    path.write_text(text)
    replay = Replay(FIXTURES / fixture)
    c = LspClient()
    try:
        c.initialize(options={
            "python": PYTHON,
            "llm": {"provider": "openai", "model": "gpt-4o-mini", "baseUrl": replay.url + "/v1"},
            "secrets": {"llm": {"provider": "openai", "apiKey": KEY}}})
        c.open(path.as_uri(), text)
        c.diagnostics(path.as_uri(), version=1)
        editor = Editor(c, path.as_uri(), text)
        started = c.request("workspace/executeCommand", {
            "command": "maxkernel.optimizeStepByStep",
            "arguments": [{"uri": path.as_uri()}]})["result"]
        editor.next_question()  # the plan
        editor.answers.put(pick("Next phase: test"))
        yield editor, replay, store, started
        editor.answers.put(pick("Stop"))
        c.wait_notification("window/showMessage", lambda p: "stopped" in p["message"], timeout=30)
    finally:
        try:
            c.shutdown_and_exit()
        finally:  # also when the server does not shut down cleanly after a failed assertion
            c.close()
            replay.stop()


def test_debug_this_sends_the_report_and_the_users_edit_of_the_fix_is_what_runs(tmp_path, monkeypatch):
    with in_test_phase(tmp_path, monkeypatch, "hitl_debug_nan_row_openai.json", "rows_unit_norm.py",
                chain.NORM_RSQRT) as (editor, replay, store, started):
        message, actions = editor.next_question(timeout=300)
        assert message.startswith("MaxKernel: Step 4/6 test: test on local: incorrect"), message
        titles = [a["title"] for a in actions]
        assert titles[0] == "Debug this" and "Run the fix" not in titles, titles

        editor.answers.put(pick("Debug this"))
        message, actions = editor.next_question(timeout=120)
        assert "the debugger proposed a fix (attempt 1 of 3" in message, message
        assert [a["title"] for a in actions][:2] == ["Run the fix", "Debug this"]
        fix_file = Path(editor.shown[-1]["uri"][len("file://"):])
        assert fix_file.name == "fix.py" and editor.shown[-1]["takeFocus"] is True
        assert fix_file.read_text() == chain.NORM_RAW_FIX  # the code of the debugger's answer
        assert not editor.edits, "nothing is applied before the user says so"

        # The user corrects the clamp before running it; the raw fix would still give NaN.
        fix_file.write_text(chain.NORM_USER_FIX)
        editor.edit_answers.put(True)
        editor.answers.put(pick("Run the fix"))
        message, actions = editor.next_question(timeout=300)
        assert message.startswith("MaxKernel: Step 4/6 test: test on local: correct"), message
        titles = [a["title"] for a in actions]
        assert "Debug this" not in titles and "Run the fix" not in titles, titles
        (edit,) = editor.edits
        assert edit["edit"]["documentChanges"][0]["textDocument"]["version"] == 1
        assert editor.text == chain.NORM_USER_FIX

        # The debugger was sent the test's report: the NaN row, where, against what tolerance.
        log = replay.control("/_log")
        assert [r["purpose"] for r in log] == ["planner", "debugger"]
        assert log[1]["entry"] is not None, "the debugger's request matched no recorded answer"
        text = sent_text(log[1])
        for needle in chain.EXPECTS + ["Correctness report (seed ", "allowed |c - r| <= "]:
            assert needle in text, (needle, text)
        assert "jax.lax.rsqrt(jnp.sum(x * x, axis=1, keepdims=True))" in text  # the failing file
        # ... shown once: its "written from" is not the same file again, said to work.
        assert text.count("def _kernel(") == 1 and "is the session's own code" in text

        saved = saved_session(store, started["session"])
        assert saved["code"] == chain.NORM_USER_FIX
        events = [h["event"] for h in saved["history"] if h["phase"] == "test"]
        for event in ("report", "debug", "fix", "run fix", "applied"):
            assert event in events, events
        with sqlite3.connect(store) as db:
            nodes = db.execute("SELECT status, code FROM nodes WHERE run_id = ? ORDER BY id",
                               (started["run"],)).fetchall()
        assert [n[0] for n in nodes] == ["pending", "incorrect", "correct"]
        assert nodes[2][1] == chain.NORM_USER_FIX


def test_a_kernel_that_does_not_lower_is_debugged_from_the_workers_lowering_error(tmp_path, monkeypatch):
    with in_test_phase(tmp_path, monkeypatch, "hitl_debug_lowering_openai.json", "scale_rows.py",
                chain.SCALE_12) as (editor, replay, _, _):
        message, actions = editor.next_question(timeout=300)
        assert message.startswith("MaxKernel: Step 4/6 test: test on local: failed (lowering)"), message
        assert actions[0]["title"] == "Debug this"
        editor.answers.put(pick("Debug this"))
        message, _ = editor.next_question(timeout=120)
        assert "the debugger proposed a fix (attempt 1 of 3, 1 line(s) new)" in message, message
        editor.edit_answers.put(True)
        editor.answers.put(pick("Run the fix"))  # as the debugger wrote it
        message, _ = editor.next_question(timeout=300)
        assert message.startswith("MaxKernel: Step 4/6 test: test on local: correct"), message
        assert editor.text == chain.SCALE_16
        log = replay.control("/_log")
        assert [r["purpose"] for r in log] == ["planner", "debugger"] and log[1]["entry"] is not None
        text = sent_text(log[1])
        for needle in chain.LOWERING_EXPECTS:
            assert needle in text, (needle, text)
