"""Test kernel for the cheat search (tests/optimize/test_cheats_front_ends.py): an f32 matmul
tiled over rows with a small block, so a larger block is an honest improvement the time model
can see (fewer grid steps). fixtures/make_cheat_chain.py derives the cheating answers from it."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

M, K, N = 128, 128, 128
BLOCK_M = 16
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
    return pl.pallas_call(
        _matmul,
        out_shape=jax.ShapeDtypeStruct((M, N), jnp.float32),
        grid=(M // BLOCK_M,),
        in_specs=[pl.BlockSpec((BLOCK_M, K), lambda i: (i, 0)),
                  pl.BlockSpec((K, N), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((BLOCK_M, N), lambda i: (i, 0)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(a, b)
