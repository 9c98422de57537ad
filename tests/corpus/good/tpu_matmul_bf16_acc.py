"""Tiled bf16 x bf16 -> bf16 matmul with an f32 VMEM accumulator (TPU / Mosaic)."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

# Tile sizes tuned for v5e: bf16 sublane tiles are multiples of 16.
BLOCK_M = 256
BLOCK_N = 256
BLOCK_K = 512

M, K, N = 2048, 4096, 1024


def _matmul_kernel(x_ref, y_ref, o_ref, acc_ref):
    @pl.when(pl.program_id(2) == 0)
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(
        x_ref[...], y_ref[...], preferred_element_type=jnp.float32
    )

    @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
    def _flush():
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)


def matmul(x: jax.Array, y: jax.Array) -> jax.Array:
    m, k = x.shape
    k2, n = y.shape
    assert k == k2, (x.shape, y.shape)
    grid = (m // BLOCK_M, n // BLOCK_N, k // BLOCK_K)
    return pl.pallas_call(
        _matmul_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=grid,
        in_specs=[
            pl.BlockSpec((BLOCK_M, BLOCK_K), lambda i, j, kk: (i, kk)),
            pl.BlockSpec((BLOCK_K, BLOCK_N), lambda i, j, kk: (kk, j)),
        ],
        out_specs=pl.BlockSpec((BLOCK_M, BLOCK_N), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((BLOCK_M, BLOCK_N), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary"),
        ),
    )(x, y)


def corpus_entry():
    args = (
        jax.ShapeDtypeStruct((M, K), jnp.bfloat16),
        jax.ShapeDtypeStruct((K, N), jnp.bfloat16),
    )
    return matmul, args
