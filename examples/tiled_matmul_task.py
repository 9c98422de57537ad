"""A tiled matmul that carries its own task (in-file form: `reference` + `make_inputs`), so
`maxkernel test` and `maxkernel optimize` can run it directly. The blocks are deliberately small:
the search should find larger tiles (fewer grid steps, less HBM re-reading) and keep them correct.
"""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

M, N, K = 512, 512, 512
BLOCK_M = 128
BLOCK_N = 128
BLOCK_K = 128
TOLERANCES = {"rtol": 2e-2, "atol": 2e-2}


def reference(a, b):
    return jnp.dot(a, b, preferred_element_type=jnp.float32).astype(jnp.bfloat16)


def make_inputs(key):
    ka, kb = jax.random.split(key)
    a = jax.random.normal(ka, (M, K), jnp.bfloat16)
    b = jax.random.normal(kb, (K, N), jnp.bfloat16)
    return a, b


def matmul_kernel(a_ref, b_ref, o_ref, acc_ref):
    @pl.when(pl.program_id(2) == 0)
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)

    @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
    def _store():
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)


def candidate(a, b):
    return pl.pallas_call(
        matmul_kernel,
        out_shape=jax.ShapeDtypeStruct((M, N), jnp.bfloat16),
        grid=(M // BLOCK_M, N // BLOCK_N, K // BLOCK_K),
        in_specs=[
            pl.BlockSpec((BLOCK_M, BLOCK_K), lambda i, j, k: (i, k)),
            pl.BlockSpec((BLOCK_K, BLOCK_N), lambda i, j, k: (k, j)),
        ],
        out_specs=pl.BlockSpec((BLOCK_M, BLOCK_N), lambda i, j, k: (i, j)),
        scratch_shapes=[pltpu.VMEM((BLOCK_M, BLOCK_N), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")),
    )(a, b)
