"""'Optimize step by step' with an LLM: maxkernel.llm names an OpenAI-compatible endpoint (the
replay server over loopback HTTP, serving tests/optimize/fixtures/hitl_scale_rows_openai.json),
the key arrives from the editor's secret store, the Planner writes the plan and the Implementer
the edit. Faults from the endpoint become a clear phase summary and the session keeps asking."""
import json
import re
import shutil
import sqlite3
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from lsp_client import LspClient, apply_text_edits
from test_hitl import PYTHON, Editor, assert_only_changed_lines, pick, saved_session

ROOT = Path(__file__).resolve().parents[2]
KERNEL = ROOT / "tests" / "optimize" / "kernels" / "scale_rows.py"
FIXTURE = ROOT / "tests" / "optimize" / "fixtures" / "hitl_scale_rows_openai.json"
REPLAY = ROOT / "agents" / "replay" / "replay_server.py"
PLANTED_KEY = "sk-PLANTED-hitl-7f6e5d4c3b2a"


def recorded(purpose):
    """The text and usage the fixture streams for the first answer of this purpose."""
    doc = json.loads(FIXTURE.read_text())
    (entry,) = [e for e in doc["entries"] if e["match"]["purpose"] == purpose][:1]
    text, usage = "", None
    for chunk in entry["chunks"]:
        data = chunk[len("data: "):].strip()
        if data == "[DONE]":
            continue
        event = json.loads(data)
        for choice in event["choices"]:
            text += choice["delta"].get("content") or ""
        usage = event.get("usage") or usage
    return text, usage


def recorded_kernel():
    text, _ = recorded("implementer")
    (code,) = re.findall(r"```python\n(.*?)```", text, re.DOTALL)
    return code


def recorded_strategies():
    text, _ = recorded("planner")
    return json.loads(text.split("```json\n", 1)[1].rsplit("```", 1)[0])["strategies"]


class Replay:
    """agents/replay/replay_server.py on a free loopback port, owned by the test."""

    def __init__(self, fixture):
        self.process = subprocess.Popen([sys.executable, str(REPLAY), str(fixture)],
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.process.stdout.readline()
        assert line.startswith("PORT "), f"replay server said {line!r}"
        self.url = f"http://127.0.0.1:{int(line.split()[1])}"

    def control(self, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        with urllib.request.urlopen(urllib.request.Request(self.url + path, data=data),
                                    timeout=10) as reply:
            return json.loads(reply.read())

    def purposes(self):
        return [r["purpose"] for r in self.control("/_log")]

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)


@pytest.fixture
def session(tmp_path, monkeypatch):
    """A server whose maxkernel.llm is the replay endpoint, a kernel open in the scripted editor."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # the key must come from the editor
    store = tmp_path / "store" / "store.sqlite"
    monkeypatch.setenv("MAXKERNEL_STORE", str(store))
    path = tmp_path / "scale_rows.py"
    shutil.copy(KERNEL, path)
    replay = Replay(FIXTURE)
    c = LspClient()
    try:
        c.initialize(options={
            "python": PYTHON,
            "llm": {"provider": "openai", "model": "gpt-4o-mini", "baseUrl": replay.url + "/v1"},
            "secrets": {"llm": {"provider": "openai", "apiKey": PLANTED_KEY}}})
        text = path.read_text()
        c.open(path.as_uri(), text)
        c.diagnostics(path.as_uri(), version=1)
        yield c, Editor(c, path.as_uri(), text), replay, store, path
    finally:
        c.shutdown_and_exit()
        replay.stop()


def start(c, path):
    result = c.request("workspace/executeCommand", {
        "command": "maxkernel.optimizeStepByStep",
        "arguments": [{"uri": path.as_uri(), "kernel": 0}]})["result"]
    assert result["status"] == "started", result
    return result


def assert_key_kept_secret(c, store, tmp_path):
    logs = "".join(c.stderr_lines)
    assert "API key received" in logs
    assert PLANTED_KEY not in logs
    for f in [store] + list(tmp_path.rglob("*")):
        if f.is_file():
            assert PLANTED_KEY.encode() not in f.read_bytes(), f"the key leaked into {f}"


def test_the_llm_plans_and_its_recorded_kernel_is_the_accepted_edit(session, tmp_path):
    c, editor, replay, store, path = session
    original = path.read_text()
    expected = recorded_kernel()
    assert expected != original
    result = start(c, path)

    message, _ = editor.next_question()
    strategies = recorded_strategies()
    assert f"Step 1/6 plan: {len(strategies)} strategies proposed" in message
    plan_file = Path(editor.shown[0]["uri"][len("file://"):])
    plan = plan_file.read_text()
    for s in strategies:
        assert f"- [x] {s['name']}: {s['why']}" in plan, plan
    assert "(LLM planner)" in plan
    # The user keeps only the first strategy: implement must send only that line.
    plan_file.write_text(plan.replace(f"- [x] {strategies[1]['name']}:",
                                      f"- [ ] {strategies[1]['name']}:"))

    editor.edit_answers.put(True)
    editor.answers.put(pick("Approve"))
    message, _ = editor.next_question()
    assert message.startswith("MaxKernel: Step 2/6 implement: applied 1 of 1 ticked strategies; "
                              f"{strategies[0]['name']}:"), message
    assert "edit applied" in message
    (edit,) = editor.edits
    edits = edit["edit"]["documentChanges"][0]["edits"]
    assert apply_text_edits(original, edits) == expected
    assert_only_changed_lines(original, edits)
    assert editor.text == expected

    log = replay.control("/_log")
    assert [r["purpose"] for r in log] == ["planner", "implementer"]
    assert all(r["headers"]["authorization"] == f"Bearer {PLANTED_KEY}" for r in log)
    implementer_prompt = log[1]["body"]
    assert strategies[0]["name"] in implementer_prompt
    assert strategies[1]["name"] not in implementer_prompt  # unticked by the user

    saved = saved_session(store, result["session"])
    assert (saved["status"], saved["phase"], saved["code"]) == ("awaiting", "implement", expected)
    spent = [h for h in saved["history"] if h["event"] == "llm"]
    assert [h["phase"] for h in spent] == ["plan", "implement"]
    _, plan_usage = recorded("planner")
    _, impl_usage = recorded("implementer")
    assert spent[0]["text"].startswith(f"1 call(s), {plan_usage['prompt_tokens']} tokens in, "
                                       f"{plan_usage['completion_tokens']} out")
    with sqlite3.connect(store) as db:
        llm, cost = db.execute("SELECT llm, cost_json FROM runs WHERE id = ?",
                               (result["run"],)).fetchone()
    assert llm == f"openai:gpt-4o-mini@{replay.url}/v1"
    cost = json.loads(cost)
    assert cost["tokens_in"] == plan_usage["prompt_tokens"] + impl_usage["prompt_tokens"]
    assert cost["tokens_out"] == plan_usage["completion_tokens"] + impl_usage["completion_tokens"]
    assert cost["llm_calls"] == 2
    assert cost["usd"] > 0  # gpt-4o-mini is in the price table

    editor.answers.put(pick("Stop"))
    c.wait_notification("window/showMessage", lambda p: "stopped" in p["message"], timeout=30)
    assert_key_kept_secret(c, store, tmp_path)


def test_a_failing_implementer_is_a_clear_summary_and_the_session_keeps_asking(session, tmp_path):
    c, editor, replay, store, path = session
    result = start(c, path)
    editor.next_question()  # the plan
    # Every attempt of the implementer's call (the client retries 5xx) answers 500.
    replay.control("/_fault", {"type": "server_error", "status": 500, "count": 4})
    editor.answers.put(pick("Approve"))
    message, actions = editor.next_question()
    assert "Step 2/6 implement: implementing failed: the LLM call failed (server-error)" in message
    assert "Retry asks again" in message
    assert {"Retry", "Skip", "Stop"} <= {a["title"] for a in actions}
    assert not editor.edits

    # Garbage next: 200 with a body that is not the wire format (not retried by the client).
    replay.control("/_fault", {"type": "malformed", "count": 1})
    editor.answers.put(pick("Retry"))
    message, _ = editor.next_question()
    assert "implementing failed: the LLM call failed (malformed)" in message, message
    assert not editor.edits

    # The endpoint recovers: Retry gets the recorded kernel as the edit.
    editor.edit_answers.put(True)
    editor.answers.put(pick("Retry"))
    message, _ = editor.next_question()
    assert "edit applied" in message, message
    assert editor.text == recorded_kernel()
    purposes = replay.purposes()
    assert purposes[0] == "planner" and set(purposes[1:]) == {"implementer"}
    assert len(purposes) >= 4  # the planner, the failed attempts, the answer

    saved = saved_session(store, result["session"])
    failures = [h["text"] for h in saved["history"] if h["event"] == "result"
                and "implementing failed" in h["text"]]
    assert len(failures) == 2
    editor.answers.put(pick("Stop"))
    c.wait_notification("window/showMessage", lambda p: "stopped" in p["message"], timeout=30)
    assert_key_kept_secret(c, store, tmp_path)


def test_a_configured_llm_without_a_key_says_so_and_asks(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("MAXKERNEL_STORE", str(tmp_path / "store.sqlite"))
    path = tmp_path / "scale_rows.py"
    shutil.copy(KERNEL, path)
    c = LspClient()
    try:
        c.initialize(options={"python": PYTHON, "llm": {
            "provider": "openai", "model": "gpt-4o-mini", "baseUrl": "http://127.0.0.1:9/v1"}})
        c.open(path.as_uri(), path.read_text())
        c.diagnostics(path.as_uri(), version=1)
        editor = Editor(c, path.as_uri(), path.read_text())
        start(c, path)
        message, actions = editor.next_question()
        assert "Step 1/6 plan: planning failed: the LLM call failed (config)" in message, message
        assert "OPENAI_API_KEY" in message
        assert "Retry" in {a["title"] for a in actions}
        editor.answers.put(pick("Stop"))
        c.wait_notification("window/showMessage", lambda p: "stopped" in p["message"], timeout=30)
    finally:
        c.shutdown_and_exit()
