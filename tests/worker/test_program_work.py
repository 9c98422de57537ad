"""The judge's count of an exported program's work (judge.program_work, issue 36): from StableHLO text
only, loops by their trip count, scatters by their updates, custom calls listed."""
import os
import sys

import jax
import jax.numpy as jnp
from worker_harness import ROOT

sys.path.insert(0, os.path.join(ROOT, "tpu", "worker"))

from mkworker.judge import program_work as W

X = jax.ShapeDtypeStruct((64, 64), jnp.float32)


def _count(fn, *avals):
    return W.count(jax.export.export(jax.jit(fn), platforms=["tpu"])(*avals).mlir_module())


def test_a_matmul_is_two_flops_per_multiply_add():
    w = _count(lambda a, b: a @ b, X, X)
    assert w.matmul_flops == 2 * 64 * 64 * 64 and w.flops == w.matmul_flops


def test_a_loop_with_a_constant_trip_count_counts_its_body_that_often():
    def looped(a, b):
        return jax.lax.fori_loop(0, 64, lambda k, acc: acc + a[:, k][:, None] * b[k, :][None, :],
                                 jnp.zeros_like(a))

    w = _count(looped, X, X)
    assert w.unknown_loops == 0
    assert w.flops >= 64 * 2 * 64 * 64  # a multiply and an add per element, 64 times


def test_a_loop_whose_bound_is_data_is_reported():
    def looped(a):
        n = 3 + 0 * a[0, 0].astype(jnp.int32)
        return jax.lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 2.0), (0, a))[1]

    assert _count(looped, X).unknown_loops == 1


def test_scatters_count_their_updates():
    rows = jnp.arange(64)
    w = _count(lambda a, b: a.at[rows].add(b), X, X)
    assert w.scatter_elements == 64 * 64 and w.flops >= 64 * 64


def test_custom_calls_are_listed_by_target():
    text = ('func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n'
            '  %0 = stablehlo.custom_call @xla_python_cpu_callback(%arg0) {backend_config = "{\\"a\\": 1}"} '
            ': (tensor<4xf32>) -> tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n')
    assert W.count(text).custom_calls == {"xla_python_cpu_callback": 1}
