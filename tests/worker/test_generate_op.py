"""generate: the op itself (protocol, refusals, errors, progress)."""

import pytest
from worker_harness import task_path


def _task(*parts):
    return {"form": "infile", "path": task_path("generate", *parts)}


def test_generate_is_listed_in_hello(worker):
    r = worker.request("hello")
    assert "generate" in r["ops"]


def test_reply_fields_and_progress(worker):
    events = []
    rid = worker.send("generate", task=_task("mm_bias_gelu.py"), entry="my_kernel",
                      filename="/tmp/my_kernel.py")
    r = worker.wait_for(rid, timeout=300, events=events)
    assert r["ok"] is True, r.get("error")
    for key in ("class", "description", "source", "entry", "imports", "body", "tunables",
                "primitives", "lowering", "notes", "elapsed_s"):
        assert key in r, key
    assert r["entry"] == "my_kernel" and "def my_kernel(x, w, b):" in r["source"]
    assert r["lowering"]["ok"] is True and r["lowering"]["seconds"] >= 0
    assert [e["stage"] for e in events] == ["trace", "match", "lower"]
    assert r["target"] == {"name": "v5e"}  # VMEM from the generation (128 MiB on v5e)
    assert "vmem_limit_bytes=" in r["source"]  # always set from the kernel's plan


@pytest.mark.parametrize("name, prim, line", [
    ("conv_relu.py", "conv_general_dilated", 8),
    ("sort_scale.py", "sort", 7),
])
def test_uncovered_primitive_gets_no_template(worker, name, prim, line):
    r = worker.request("generate", task=_task("refuse", name), timeout=300)
    assert r["ok"] is False
    err = r["error"]
    assert err["kind"] == "no_template", err
    assert err["primitives"] == [prim]
    assert prim in err["message"] and f"line {line}" in err["message"]
    assert "configure an LLM" in err["message"]
    assert err["locations"][0]["line"] == line
    assert err["file"] == task_path("generate", "refuse", name)


def test_tuple_output_is_refused(worker):
    r = worker.request("generate", task=_task("refuse", "mm_tuple.py"), timeout=300)
    assert r["ok"] is False
    assert r["error"]["kind"] == "no_template"
    assert "tuple" in r["error"]["message"]


def test_two_matmuls_are_refused_not_half_written(worker):
    src = (
        "import jax\nimport jax.numpy as jnp\n\n"
        "def reference(x, w1, w2):\n    return jax.nn.relu(x @ w1) @ w2\n\n"
        "def make_inputs(key):\n    a, b, c = jax.random.split(key, 3)\n"
        "    return (jax.random.normal(a, (64, 128)), jax.random.normal(b, (128, 128)),\n"
        "            jax.random.normal(c, (128, 128)))\n")
    r = worker.request("generate", task={"form": "infile", "source": src, "filename": "two.py"},
                       timeout=300)
    assert r["ok"] is False
    assert r["error"]["kind"] == "no_template"
    assert "dot_general x2" in r["error"]["message"]


def test_bad_requests(worker):
    r = worker.request("generate")
    assert r["ok"] is False and r["error"]["kind"] == "bad_request"
    r = worker.request("generate", task=_task("mm_bias_gelu.py"), entry="not a name")
    assert r["ok"] is False and r["error"]["kind"] == "bad_request"
    r = worker.request("generate", task=_task("mm_bias_gelu.py"), target={"vmem_limit_bytes": 5})
    assert r["ok"] is False and r["error"]["kind"] == "bad_request"


def test_reference_that_fails_to_trace_is_a_trace_error(worker):
    src = ("import jax\nimport jax.numpy as jnp\n\n"
           "def reference(x):\n    return x @ x  # (8, 4) @ (8, 4)\n\n"
           "def make_inputs(key):\n    return (jax.random.normal(key, (8, 4)),)\n")
    r = worker.request("generate", task={"form": "infile", "source": src, "filename": "bad.py"})
    assert r["ok"] is False and r["error"]["kind"] == "trace", r["error"]
    assert r["error"]["locations"][0]["line"] == 5


def test_cancelled_while_queued(worker):
    # A slow op first, then a generate that is cancelled before it starts.
    first = worker.send("generate", task=_task("mm_bias_gelu.py"))
    second = worker.send("generate", task=_task("mm_bias_gelu.py"))
    c = worker.request("cancel", target_id=second)
    assert c["ok"] is True and c["state"] == "queued", c
    a = worker.wait_for(first, timeout=300)
    b = worker.wait_for(second, timeout=300)
    assert a["ok"] is True
    assert b["ok"] is False and b["error"]["kind"] == "cancelled"
