"""Test kernel for the debugger on wrong results (tests/optimize/test_optimize_debug.py): a matmul
over row blocks and a K axis, accumulating into its output block, which it resets at the first K
step of each row block. fixtures/make_debug_chain.py derives a variant with an f32 accumulator
scratch whose reset is wrong (once for the whole grid), and its fixes."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

M, K, N = 256, 512, 128
BLOCK_M, BLOCK_K = 128, 128
TOLERANCES = {"rtol": 1e-4, "atol": 1e-4}


def reference(a, b):
    return jnp.dot(a, b, preferred_element_type=jnp.float32)


def make_inputs(key):
    ka, kb = jax.random.split(key)
    return (jax.random.normal(ka, (M, K), jnp.float32),
            jax.random.normal(kb, (K, N), jnp.float32))


def _matmul(a_ref, b_ref, o_ref):
    @pl.when(pl.program_id(1) == 0)
    def _():
        o_ref[...] = jnp.zeros_like(o_ref)

    o_ref[...] += jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)


def candidate(a, b):
    return pl.pallas_call(
        _matmul,
        out_shape=jax.ShapeDtypeStruct((M, N), jnp.float32),
        grid=(M // BLOCK_M, K // BLOCK_K),
        in_specs=[pl.BlockSpec((BLOCK_M, BLOCK_K), lambda i, k: (i, k)),
                  pl.BlockSpec((BLOCK_K, N), lambda i, k: (k, 0))],
        out_specs=pl.BlockSpec((BLOCK_M, N), lambda i, k: (i, 0)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary")),
    )(a, b)
