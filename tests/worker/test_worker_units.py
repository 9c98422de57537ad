"""In-process unit tests of worker helpers that need no worker process."""

import ast
import os
import sys

import pytest
from worker_harness import ROOT

sys.path.insert(0, os.path.join(ROOT, "tpu", "worker"))

from mkworker import common
from mkworker.tasks import tasks
from mkworker.tasks import yaml


def test_yaml_subset():
    text = """
# comment
name: rowsum   # trailing comment
reference: "reference.py"
rtol: 1e-5
atol: 0.001
count: 3
flag: true
nothing: ~
tags:
  - a
  - 'b c'
inline: [1, 2.5, x]
nested:
  key: value
  deeper:
    - k: v
      n: 2
"""
    d = yaml.loads(text)
    assert d["name"] == "rowsum" and d["reference"] == "reference.py"
    assert d["rtol"] == 1e-5 and d["atol"] == 0.001 and d["count"] == 3
    assert d["flag"] is True and d["nothing"] is None
    assert d["tags"] == ["a", "b c"] and d["inline"] == [1, 2.5, "x"]
    assert d["nested"] == {"key": "value", "deeper": [{"k": "v", "n": 2}]}


def test_yaml_errors_carry_line():
    with pytest.raises(yaml.YamlError) as e:
        yaml.loads("a: 1\n  b: 2\n")
    assert e.value.line == 2


def test_substitute_params_constants_and_tuned_params():
    src = "BLOCK = 8\nTUNED_PARAMS = {'bm': 128}\nX = BLOCK\n"
    tree, unplaced = tasks.substitute_params(ast.parse(src), {"BLOCK": 32, "bm": 256, "bk": 64})
    ns = {}
    exec(compile(tree, "<t>", "exec"), ns)  # noqa: S102
    assert unplaced == []
    assert ns["BLOCK"] == 32 and ns["X"] == 32
    assert ns["TUNED_PARAMS"] == {"bm": 256, "bk": 64}
    _, unplaced = tasks.substitute_params(ast.parse("A = 1\n"), {"B": 2})
    assert unplaced == ["B"]


@pytest.mark.parametrize("kind, gen", [
    ("TPU v5 lite", "v5e"), ("TPU v6 lite", "v6e"), ("TPU v5p", "v5p"), ("TPU v5", "v5p"),
    ("TPU v4", "v4"), ("TPU7x", "v7"), ("cpu", None),
])
def test_tpu_generation_mapping(kind, gen):
    from mkworker.judge import run
    assert run.tpu_generation(kind) == gen


def test_takes_key_rules():
    def with_key(key): ...
    def jaxbench(dtype=None): ...
    def named_key(key=None): ...
    def none(): ...
    assert tasks.takes_key(with_key) and tasks.takes_key(named_key)
    assert not tasks.takes_key(jaxbench) and not tasks.takes_key(none)


def test_message_hints():
    hints = common.message_hints('error: loc("/x/k.py":12:5) bad; also /x/k.py:30', "/x/k.py", 40)
    assert [(h["line"], h["column"]) for h in hints] == [(12, 5), (30, 1)]
    assert common.message_hints("Mosaic failed at line 7", "/x/k.py", 10)[0]["line"] == 7


def test_input_description_round_trips_the_call():
    """The reference's child describes where its arrays sit (protocol.input_wire); the candidate's
    child rebuilds the same call from the description and the arrays."""
    from mkworker.protocol import input_wire
    import numpy as np
    a, b, c = np.zeros(3), np.ones((2, 2)), np.arange(4)
    full_args = (a, [b, 3, None], {"scale": 0.5, "w": c})
    desc = input_wire.describe(full_args, {"mode": "fast", "n": 2}, [a, b, c])
    fresh = [np.full(3, 7.0), np.full((2, 2), 8.0), np.arange(4) + 1]
    args, kwargs = input_wire.rebuild(desc, fresh)
    assert args[0] is fresh[0] and args[1][0] is fresh[1] and args[2]["w"] is fresh[2]
    assert args[1][1:] == [3, None] and type(args[1]) is list and args[2]["scale"] == 0.5
    assert kwargs == {"mode": "fast", "n": 2}


def test_input_description_refuses_what_it_cannot_say():
    from mkworker.protocol import input_wire
    import numpy as np
    a = np.zeros(3)
    assert input_wire.describe((a, np.float32(2.0)), {}, [a]) is None  # a numpy scalar static
    assert input_wire.describe((a,), {}, [a, np.ones(2)]) is None  # an array it never met
    desc = input_wire.describe((a,), {}, [a])
    with pytest.raises(ValueError):
        input_wire.rebuild(desc, [])  # fewer arrays than named
    with pytest.raises(ValueError):
        input_wire.rebuild(desc, [a, a])  # an array left out
    with pytest.raises(ValueError):
        input_wire.rebuild({"args": [{"a": 0}, {"a": 0}], "kwargs": []}, [a])  # one array twice
    with pytest.raises(ValueError):
        input_wire.rebuild({"args": [{"x": 1}], "kwargs": []}, [])


def test_the_zygote_warms_without_starting_the_backend():
    """The zygote forks every child: a JAX backend started before the fork would hand each child
    a copy of its threads' locks. Warming must trace with abstract values only."""
    import subprocess
    code = ("import sys; from mkworker.sandbox import zygote; zygote.warm(); "
            "import jax._src.pallas.mosaic.interpret as m; "
            "sys.exit(3 if zygote.backend_started() else 0)")
    r = subprocess.run([sys.executable, "-c", code], cwd=os.path.join(ROOT, "tpu", "worker"),
                       env=dict(os.environ, JAX_PLATFORMS="cpu"), capture_output=True, text=True, timeout=120,
                       check=False)
    assert r.returncode == 0, r.stderr[-2000:]


def test_input_description_of_a_deeply_nested_call_is_none_not_a_crash():
    from mkworker.protocol import input_wire
    import numpy as np
    a = np.zeros(3)
    deep = a
    for _ in range(5000):
        deep = [deep]
    assert input_wire.describe((deep,), {}, [a]) is None
