"""Test kernel for the diagnosis (tests/optimize/test_optimize_diagnosis.py): a matmul on grid
(rows, cols) whose `b` block ignores the row axis, so b comes back from HBM at every step (HBM-bound,
re-fetched along grid axis 0)."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

M, K, N = 1024, 1024, 1024
BLOCK_M = 128
BLOCK_N = 128
TOLERANCES = {"rtol": 1e-4, "atol": 1e-4}


def reference(a, b):
    return jnp.dot(a, b, preferred_element_type=jnp.float32)


def make_inputs(key):
    ka, kb = jax.random.split(key)
    return (jax.random.normal(ka, (M, K), jnp.float32),
            jax.random.normal(kb, (K, N), jnp.float32))


def _matmul(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)


def candidate(a, b):
    m, n = a.shape[0], b.shape[1]
    return pl.pallas_call(
        _matmul,
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(m // BLOCK_M, n // BLOCK_N),
        in_specs=[pl.BlockSpec((BLOCK_M, a.shape[1]), lambda i, j: (i, 0)),
                  pl.BlockSpec((b.shape[0], BLOCK_N), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((BLOCK_M, BLOCK_N), lambda i, j: (i, j)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel")),
    )(a, b)
