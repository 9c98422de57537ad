"""`maxkernel bench SUITE --optimize` end to end on a two-task suite written here (JAXBench's
layout, reference only): the generator's first kernel for an elementwise reference is checked in
interpret mode and scored vs XLA with its basis named; a reference no template covers is a row
that names the primitive; the summary counts per class. The TPU compiler is off in CI's tests
(conftest), so the basis is the model's."""

import json

import pytest
from conftest import run_cli, venv_python

ELEMENTWISE = '''import jax
import jax.numpy as jnp

CONFIG = {"name": "tanh_gate", "rows": 96, "cols": 384}


def create_inputs(dtype=jnp.float32):
    ka, kb = jax.random.split(jax.random.key(3))
    shape = (CONFIG["rows"], CONFIG["cols"])
    return jax.random.normal(ka, shape, dtype=dtype), jax.random.normal(kb, shape, dtype=dtype)


def workload(a, b):
    return jnp.tanh(a) * jax.nn.sigmoid(b) + 0.5 * a
'''

SORT = '''import jax
import jax.numpy as jnp

CONFIG = {"name": "sorted_rows", "rows": 64, "cols": 256}


def create_inputs(dtype=jnp.float32):
    return (jax.random.normal(jax.random.key(4), (CONFIG["rows"], CONFIG["cols"]), dtype=dtype),)


def workload(x):
    return jnp.sort(x, axis=-1)
'''


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    suite = tmp_path_factory.mktemp("suite")
    for name, text in (("tanh_gate", ELEMENTWISE), ("sorted_rows", SORT)):
        (suite / name).mkdir()
        (suite / name / "baseline.py").write_text(text)
    store = tmp_path_factory.mktemp("store") / "store.sqlite"
    done = run_cli("bench", suite, "--optimize", "--budget", "evaluations=2", "--format", "json",
                   "--python", venv_python(), "--store", store, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_first_kernel_is_checked_and_scored_on_a_named_basis(run):
    row = {t["name"]: t for t in run["tasks"]}["tanh_gate"]
    assert row["class"] == "elementwise", row
    assert row["compiled"] and row["correct"], row
    assert isinstance(row["speedup_vs_xla"], float) and row["speedup_vs_xla"] > 0, row
    assert row["time_kind"] == "predicted" and row["unscored"] is None, row
    assert row["cost"]["evaluations"] == 2, row


def test_a_reference_no_template_covers_is_a_row_naming_the_primitive(run):
    row = {t["name"]: t for t in run["tasks"]}["sorted_rows"]
    assert row["class"] == "none" and not row["correct"], row
    assert row["speedup_vs_xla"] is None
    assert "sort" in row["failure"], row


def test_the_summary_counts_per_class(run):
    s = run["summary"]
    assert s["tasks"] == 2 and s["correct"] == 1, s
    assert s["per_class"]["elementwise"] == {"tasks": 1, "compiled": 1, "correct": 1}, s
    assert s["per_class"]["none"]["correct"] == 0, s
    assert s["geomean_speedup_predicted"] == pytest.approx(run["tasks"][1]["speedup_vs_xla"]
                                                           if run["tasks"][1]["name"] == "tanh_gate"
                                                           else run["tasks"][0]["speedup_vs_xla"])
    assert s["fast_p"]["fast_0.0"] == 0.5, s["fast_p"]
    # The compiler is off here: a model speedup is against XLA's roofline, never counted as fast.
    assert s["fast_p"]["fast_1.0"] == 0.0 and s["fast_p"]["fast_2.0"] == 0.0, s["fast_p"]
