"""The TPU compiler's static cycles and our analytic model against the measured v5e rows of the JAX
Pallas TPU matmul guide (bf16; https://docs.jax.dev/en/latest/pallas/tpu/matmul.html).

    .venv/bin/python bench/calibration/pallas_guide_v5e.py     # prints the bench/RESULTS.md table

tests/worker/test_tpu_compiler_calibration.py holds two rows' XLA / Pallas ratio to 5%."""

from __future__ import annotations

import functools
import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tpu", "worker"))

import jax
import jax.numpy as jnp
from mkworker.tpu_compiler import compiler
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

# (name, n, blocks (bm, bk, bn) or None for XLA, measured seconds on v5e from the guide's table)
ROWS = [
    ("XLA 8192^3", 8192, None, 6.05e-3),
    ("Pallas 8192^3 512/1024/1024", 8192, (512, 1024, 1024), 6.10e-3),
    ("XLA 4096^3", 4096, None, 0.83e-3),
    ("Pallas 4096^3 512/1024/1024", 4096, (512, 1024, 1024), 0.89e-3),
    ("Pallas 4096^3 128/128/128", 4096, (128, 128, 128), 11.77e-3),
    ("Pallas 8192^3 128/128/128", 8192, (128, 128, 128), 91.8e-3),
]
# v5e, as in knowledge/data/tpu_generations.json and knowledge/time_model.h.
PEAK_BF16, HBM_BW, STEP_S = 197e12, 819e9, 0.35e-6


def _kernel(x_ref, y_ref, o_ref, acc_ref, *, k_steps):
    @pl.when(pl.program_id(2) == 0)
    def _():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    @pl.when(pl.program_id(2) == k_steps - 1)
    def _():
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)


def pallas_matmul(n, bm, bk, bn):
    def mm(x, y):
        return pl.pallas_call(
            functools.partial(_kernel, k_steps=n // bk),
            out_shape=jax.ShapeDtypeStruct((n, n), x.dtype),
            grid=(n // bm, n // bn, n // bk),
            in_specs=[pl.BlockSpec((bm, bk), lambda i, j, k: (i, k)),
                      pl.BlockSpec((bk, bn), lambda i, j, k: (k, j))],
            out_specs=pl.BlockSpec((bm, bn), lambda i, j, k: (i, j)),
            scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
            compiler_params=pltpu.CompilerParams(
                dimension_semantics=("parallel", "parallel", "arbitrary")),
        )(x, y)
    return mm


def program(n, blocks):
    return jnp.matmul if blocks is None else pallas_matmul(n, *blocks)


def compile_row(n, blocks, limits=None) -> dict:
    specs = [jax.ShapeDtypeStruct((n, n), jnp.bfloat16)] * 2
    return compiler.estimate(program(n, blocks), specs, "v5e", limits=limits)


def analytic_s(n, blocks) -> float:
    """docs/time-model.md: max(compute, memory, steps x 0.35 us); XLA as one step at its roofline."""
    compute = 2 * n ** 3 / PEAK_BF16
    if blocks is None:
        return max(compute, 3 * n * n * 2 / HBM_BW)
    bm, bk, bn = blocks
    steps = (n // bm) * (n // bn) * (n // bk)
    memory = (steps * (bm * bk + bk * bn) * 2 + n * n * 2) / HBM_BW
    return max(compute, memory, steps * STEP_S)


def main():
    print("| program | measured | TPU compiler: cycles | predicted | error | model (fixed) | error |")
    print("|---|---|---|---|---|---|---|")
    for name, n, blocks, measured in ROWS:
        steps = 0 if blocks is None else (n // blocks[0]) * (n // blocks[2]) * (n // blocks[1])
        if steps > 100_000:
            comp = {"status": "not compiled", "reason": f"{steps} grid steps: over the compile bound"}
        else:
            comp = compile_row(n, blocks)
        a = analytic_s(n, blocks)
        if comp.get("predicted_s"):
            c = f"{comp['cycles']:,} | {comp['predicted_s'] * 1e3:.2f} ms | {comp['predicted_s'] / measured - 1:+.1%}"
        else:
            c = f"{comp['status']} | - | -"
        print(f"| {name} | {measured * 1e3:.2f} ms | {c} | {a * 1e3:.2f} ms | {a / measured - 1:+.1%} |"
              f"  <!-- compile {comp.get('wall_s', 0):.1f} s, rss {comp.get('rss_peak_bytes', 0) >> 20} MiB -->")
    compiler.shutdown()


if __name__ == "__main__":
    main()
