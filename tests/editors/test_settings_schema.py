"""The one settings schema (editors/settings.schema.json) against the VS Code manifest: every
setting VS Code shows is in the schema with the same type, default, enum, bounds and scope, and
every schema setting not marked x-hidden is shown. The server (tests/transcript/test_settings.py)
and the Neovim plugin (tests/editors/neovim/test_setup.lua) are held to the same file."""
import json
from pathlib import Path

import jsonschema

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "editors" / "settings.schema.json").read_text())
MANIFEST = json.loads((ROOT / "editors" / "vscode" / "package.json").read_text())
COMPARED = ("type", "default", "enum", "minimum", "maximum", "items", "scope", "markdownDescription")


def leaves(schema, prefix="maxkernel"):
    """Dotted name -> schema of each setting (objects with properties are folders, not settings)."""
    out = {}
    for name, sub in schema["properties"].items():
        dotted = f"{prefix}.{name}"
        if sub.get("type") == "object" and "properties" in sub:
            out.update(leaves(sub, dotted))
        else:
            out[dotted] = sub
    return out


def test_the_schema_is_a_valid_json_schema():
    jsonschema.Draft7Validator.check_schema(SCHEMA)


def test_vscode_shows_exactly_the_schema_settings_with_the_same_declarations():
    shown = MANIFEST["contributes"]["configuration"]["properties"]
    wanted = {k: v for k, v in leaves(SCHEMA).items() if not v.get("x-hidden")}
    assert sorted(shown) == sorted(wanted)
    for key, declared in shown.items():
        for field in COMPARED:
            assert declared.get(field) == wanted[key].get(field), (key, field)


def test_the_defaults_are_valid_settings():
    defaults = {}
    for dotted, sub in leaves(SCHEMA).items():
        if "default" not in sub:
            continue
        node = defaults
        *folders, last = dotted.split(".")[1:]
        for f in folders:
            node = node.setdefault(f, {})
        node[last] = sub["default"]
    jsonschema.Draft7Validator(SCHEMA).validate(defaults)
    misspelled = dict(defaults, budgets={"maxUsd": 1})
    assert not jsonschema.Draft7Validator(SCHEMA).is_valid(misspelled)


def test_an_untrusted_workspace_cannot_choose_what_runs():
    trust = MANIFEST["capabilities"]["untrustedWorkspaces"]
    assert trust["supported"] == "limited" and trust["description"]
    restricted = set(trust["restrictedConfigurations"])
    # The programs the extension starts, and where kernels run, come from user settings only.
    assert {"maxkernel.serverPath", "maxkernel.server.extraArgs", "maxkernel.python", "maxkernel.hosts"} <= restricted
    assert restricted <= set(leaves(SCHEMA))
