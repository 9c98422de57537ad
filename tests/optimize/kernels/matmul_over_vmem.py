"""Test kernel for the diagnosis (tests/optimize/test_optimize_diagnosis.py): a matmul whose
whole-K blocks, double-buffered, need more VMEM per step than the default scoped limit."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

M, K, N = 1024, 8192, 1024
BLOCK_M = 512
BLOCK_N = 512
TOLERANCES = {"rtol": 1e-3, "atol": 1e-3}


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
