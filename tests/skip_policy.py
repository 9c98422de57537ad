"""A skip is a failure in CI unless the test says why it may skip on this kind of machine.

A regression that shows up as a skip (a missing tool, a refused mount, a method the server no
longer offers) would otherwise pass unnoticed. Declare a skip either way:
  @pytest.mark.may_skip("why this machine kind may lack it")   on the test (or module pytestmark)
  pytest.skip("declared: why")                                  the reason's prefix
Strict when CI=true or MAXKERNEL_STRICT_SKIPS=1 (MAXKERNEL_STRICT_SKIPS=0 turns it off): an
undeclared skip then fails the test with its reason. Every skip (declared, and undeclared outside
strict mode) is listed at the end of the session and appended to $MAXKERNEL_SKIP_LOG when set
(scripts/test.sh prints that file at the end). Loaded by tests/conftest.py and
bench/load/conftest.py through register()."""
import os

import pytest

PLUGIN_NAME = "maxkernel-skip-policy"
DECLARED_PREFIX = "declared: "


def strict():
    explicit = os.environ.get("MAXKERNEL_STRICT_SKIPS")
    if explicit is not None and explicit != "":
        return explicit == "1"
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


def register(config):
    """Registers this module once per session, whichever conftest asks first."""
    import sys
    module = sys.modules[__name__]
    if not config.pluginmanager.has_plugin(PLUGIN_NAME):
        config.pluginmanager.register(module, PLUGIN_NAME)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "may_skip(why): this test may skip on some machine kinds, for the reason given")
    config._maxkernel_skips = []


def _skip_reason(report):
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = _skip_reason(report)
    marker = item.get_closest_marker("may_skip")
    declared = marker.args[0] if marker and marker.args else None
    if reason.startswith(DECLARED_PREFIX):
        declared = reason[len(DECLARED_PREFIX):]
    skips = getattr(item.config, "_maxkernel_skips", None)
    if declared is not None:
        if skips is not None:
            skips.append(("declared", item.nodeid, reason, declared))
        return
    if strict():
        report.outcome = "failed"
        report.longrepr = (
            f"undeclared skip (CI=true or MAXKERNEL_STRICT_SKIPS=1): {reason}\n"
            "A skip in CI is a failure unless the test declares why it may skip on this machine "
            "kind: @pytest.mark.may_skip(\"why\") or pytest.skip(\"declared: why\") "
            "(tests/skip_policy.py).")
        if skips is not None:
            skips.append(("FAILED undeclared", item.nodeid, reason, None))
    elif skips is not None:
        skips.append(("undeclared", item.nodeid, reason, None))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    skips = getattr(config, "_maxkernel_skips", [])
    if not skips:
        return
    terminalreporter.section("skips (tests/skip_policy.py)")
    lines = []
    for kind, nodeid, reason, declared in skips:
        why = f" [declared: {declared}]" if declared and declared != reason.removeprefix(
            DECLARED_PREFIX) else ""
        lines.append(f"{kind} skip: {nodeid}: {reason}{why}")
    for line in lines:
        terminalreporter.write_line(line)
    log = os.environ.get("MAXKERNEL_SKIP_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            for line in lines:
                f.write(f"pytest: {line}\n")
