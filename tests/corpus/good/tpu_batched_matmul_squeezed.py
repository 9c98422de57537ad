"""Batched matmul (B, M, K) x (B, K, N): the batch dim is squeezed out of every block."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

B, M, K, N = 16, 512, 1024, 512
BM, BN, BK = 256, 256, 512


def _bmm_kernel(a_ref, b_ref, o_ref, acc_ref):
    # Refs are 2-D: the leading batch dim (None / pl.squeezed) is dropped.
    @pl.when(pl.program_id(3) == 0)
    def _():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)

    @pl.when(pl.program_id(3) == pl.num_programs(3) - 1)
    def _():
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)


def batched_matmul(a, b):
    return pl.pallas_call(
        _bmm_kernel,
        out_shape=jax.ShapeDtypeStruct((B, M, N), jnp.bfloat16),
        grid=(B, M // BM, N // BN, K // BK),
        in_specs=[
            pl.BlockSpec((None, BM, BK), lambda b_, i, j, k: (b_, i, k)),
            pl.BlockSpec((pl.squeezed, BK, BN), lambda b_, i, j, k: (b_, k, j)),
        ],
        out_specs=pl.BlockSpec((pl.Squeezed(), BM, BN), lambda b_, i, j, k: (b_, i, j)),
        scratch_shapes=[pltpu.VMEM((BM, BN), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "parallel", "arbitrary"),
        ),
    )(a, b)


def corpus_entry():
    return batched_matmul, (
        jax.ShapeDtypeStruct((B, M, K), jnp.bfloat16),
        jax.ShapeDtypeStruct((B, K, N), jnp.bfloat16),
    )
