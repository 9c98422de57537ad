"""The server reads the settings editors/settings.schema.json declares, all of them, and says so in
the editor (window/showMessage) when a key is not one of them, with the nearest name: a misspelled
setting is never ignored without a word."""
import json
from pathlib import Path

from lsp_client import LspClient
from lsp_client.client import default_capabilities

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "editors" / "settings.schema.json").read_text())
EXAMPLE = {"string": "x", "integer": 0, "number": 0, "boolean": True, "array": []}


def every_setting(schema):
    """The section with every setting of the schema, at its default or a valid example."""
    out = {}
    for name, sub in schema["properties"].items():
        if sub.get("type") == "object" and "properties" in sub:
            out[name] = every_setting(sub)
        elif "default" in sub:
            out[name] = sub["default"]
        else:
            out[name] = EXAMPLE[sub["type"] if isinstance(sub["type"], str) else sub["type"][0]]
    return out


def messages_on_start(options):
    """The showMessage texts the server sends for these initializationOptions, up to a sentinel."""
    caps = default_capabilities()
    caps["workspace"]["configuration"] = False  # didChangeConfiguration carries the settings
    c = LspClient()
    try:
        c.initialize(capabilities=caps, options=options)
        c.notify("workspace/didChangeConfiguration", {"settings": {"maxkernel": {"target": "v9x"}}})
        c.wait_notification("window/showMessage", lambda p: "'v9x'" in p["message"])
        return [m["params"]["message"] for m in c.queued() if m.get("method") == "window/showMessage"]
    finally:
        c.close()


def test_every_setting_of_the_schema_is_read_without_a_complaint():
    assert messages_on_start({"maxkernel": every_setting(SCHEMA)}) == []


def test_unknown_settings_are_named_in_the_editor_with_the_nearest_name():
    got = messages_on_start({"maxkernel": {
        "budgets": {"maxUsd": 1},  # what the Neovim plugin used to send
        "budget": {"maxIteration": 3},
        "llm": {"provider": "none", "temperature": 0.2},
        "lowerOnSafe": True,
    }})
    assert sorted(got) == sorted([
        "MaxKernel: maxkernel.budgets is not a setting (did you mean maxkernel.budget?)",
        "MaxKernel: maxkernel.budget.maxIteration is not a setting (did you mean maxkernel.budget.maxIterations?)",
        "MaxKernel: maxkernel.llm.temperature is not a setting",
        "MaxKernel: maxkernel.lowerOnSafe is not a setting (did you mean maxkernel.lowerOnSave?)",
    ])
