"""The diagnosis chooses what to try next, on real workers (CPU, no LLM): on three kernels whose
bottleneck is known, the first expansion is the family that answers it, each child records the
diagnosis it answers, and the CLI prints the best node's diagnosis."""
import json

import pytest

from optimize_helpers import kernel_copy, node_rows, optimize, runs


def first_children(kernel_name, tmp_path, *extra):
    kernel = kernel_copy(tmp_path, kernel_name)
    store = tmp_path / "store.sqlite"
    proc = optimize(kernel, store, "--budget", "iterations=1", "--branches", "3", *extra)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    rows = node_rows(store, out["run"])
    root_metrics = json.loads(rows[0][5])
    children = [n for n in out["nodes"] if n["parent"] == 0]
    assert children, out
    out["store"] = str(store)
    return out, root_metrics, children


def block_move(description):
    """(name, from, to) of a "NAME a -> b" block move."""
    name, rest = description.split(" ", 1)
    before, after = rest.split(" -> ")
    return name, int(before), int(after)


def test_a_matmul_re_fetching_b_every_step_asks_for_a_larger_block_on_the_reused_axis(tmp_path):
    out, root, children = first_children("matmul_refetch.py", tmp_path, "--shrink", "8")
    bottleneck = root["bottleneck"]
    assert bottleneck["bound"] == "HBM"
    refetched = bottleneck["refetched"][0]
    assert refetched["ratio"] == 8 and refetched["along_axes"] == [0]  # b ignores the row axis
    assert "re-fetched 8x along grid axis 0" in bottleneck["summary"]
    first = children[0]
    assert first["strategy"] == "block_sizes"
    name, before, after = block_move(first["description"])
    assert name == "BLOCK_M" and after > before  # larger blocks along the axis b is re-read on
    for child in children:
        assert child["answers"].startswith("HBM-bound: ")
        assert child["strategy"] in ("block_sizes", "autotune")


def test_a_grid_overhead_bound_elementwise_kernel_asks_for_fewer_larger_steps(tmp_path):
    out, root, children = first_children("add_tiny_blocks.py", tmp_path, "--shrink", "8")
    assert root["bottleneck"]["bound"] == "grid overhead"
    assert root["bottleneck"]["overhead_s"] > root["bottleneck"]["memory_s"]
    for child in children:
        assert child["strategy"] in ("block_sizes", "autotune")
        _, before, after = block_move(child["description"])
        assert after > before
        assert child["answers"].startswith("grid overhead-bound")
    assert children[0]["strategy"] == "block_sizes"
    assert 0 < root["roofline_fraction"] < 1


def test_a_kernel_over_the_vmem_budget_asks_for_smaller_blocks(tmp_path):
    out, root, children = first_children("matmul_over_vmem.py", tmp_path, "--shrink", "2")
    bottleneck = root["bottleneck"]
    assert bottleneck["bound"] == "VMEM"
    assert bottleneck["vmem_bytes"] > bottleneck["vmem_limit_bytes"]
    first = children[0]
    assert first["strategy"] in ("accumulator_f32", "buffering", "block_sizes")
    for child in children:
        assert child["answers"].startswith("over the VMEM budget")
        if child["strategy"] in ("block_sizes", "autotune"):
            _, before, after = block_move(child["description"])
            assert after < before
    # The CLI prints the best node's diagnosis, in JSON and in `runs show` text.
    summary = out["best"]["bottleneck"]["summary"]
    shown = runs("show", out["run"], store=out["store"])
    assert shown.returncode == 0, shown.stderr
    assert f"diagnosis: {summary}" in shown.stdout


def test_without_the_diagnosis_the_order_is_plain_and_no_child_claims_an_answer(tmp_path):
    out, root, children = first_children("matmul_over_vmem.py", tmp_path, "--shrink", "2",
                                         "--no-diagnosis")
    assert root["bottleneck"]["bound"] == "VMEM"  # still diagnosed and recorded
    assert all(child["answers"] == "" for child in children)
    assert out["params"]["search"]["diagnosis"] is False
