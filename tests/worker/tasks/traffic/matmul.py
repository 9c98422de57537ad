"""Tiled matmul, grid (M/bm, N/bn, K/bk) = (2, 2, 4), K innermost.

Traffic by hand (f32, every block 128x128 = 65536 bytes, 16 grid steps):
- A (i, k): k changes every step, so A's index changes every step: 16 fetches.
- B (k, j): likewise 16 fetches.
- out (i, j): constant over the 4 k steps: 4 runs, 4 writebacks.
"""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

M, N, K = 256, 256, 512
BM, BN, BK = 128, 128, 128
TOLERANCES = {"rtol": 1e-4, "atol": 1e-4}


def reference(a, b):
    return jnp.dot(a, b, precision=jax.lax.Precision.HIGHEST)


def make_inputs(key):
    ka, kb = jax.random.split(key)
    return (jax.random.normal(ka, (M, K), jnp.float32),
            jax.random.normal(kb, (K, N), jnp.float32))


def _kernel(a_ref, b_ref, o_ref, acc_ref):
    @pl.when(pl.program_id(2) == 0)
    def _():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(a_ref[...], b_ref[...], precision=jax.lax.Precision.HIGHEST,
                            preferred_element_type=jnp.float32)

    @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
    def _():
        o_ref[...] = acc_ref[...]


def candidate(a, b):
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((M, N), jnp.float32),
        grid=(M // BM, N // BN, K // BK),
        in_specs=[pl.BlockSpec((BM, BK), lambda i, j, k: (i, k)),
                  pl.BlockSpec((BK, BN), lambda i, j, k: (k, j))],
        out_specs=pl.BlockSpec((BM, BN), lambda i, j, k: (i, j)),
        scratch_shapes=[pltpu.VMEM((BM, BN), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")),
    )(a, b)
