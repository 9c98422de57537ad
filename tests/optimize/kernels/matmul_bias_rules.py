"""A bf16 matmul plus bias with an in-file task, written so that every rewrite rule applies: a
scratch accumulator declared in bf16 (accumulator_f32), a bias block that never moves
(buffering), no dimension_semantics (dimension_semantics), and tunable blocks (block_sizes).
Small enough for interpret mode: tests/optimize/test_rewrites_evaluate.py checks every rewrite
against the reference, not only that it lowers."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

M, K, N = 128, 512, 256
BLOCK_M = 64
BLOCK_K = 256
TOLERANCES = {"rtol": 3e-2, "atol": 3e-2}


def reference(x, w, b):
    return (jnp.dot(x.astype(jnp.float32), w.astype(jnp.float32)) + b).astype(jnp.bfloat16)


def make_inputs(key):
    kx, kw, kb = jax.random.split(key, 3)
    return (jax.random.normal(kx, (M, K), jnp.float32).astype(jnp.bfloat16),
            jax.random.normal(kw, (K, N), jnp.float32).astype(jnp.bfloat16),
            jax.random.normal(kb, (1, N), jnp.float32))


def matmul_bias_kernel(x_ref, w_ref, b_ref, o_ref, acc_ref):
    @pl.when(pl.program_id(1) == 0)
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32).astype(
        acc_ref.dtype
    )

    @pl.when(pl.program_id(1) == pl.num_programs(1) - 1)
    def _store():
        o_ref[...] = (acc_ref[...].astype(jnp.float32) + b_ref[...]).astype(o_ref.dtype)


def candidate(x, w, b):
    return pl.pallas_call(
        matmul_bias_kernel,
        out_shape=jax.ShapeDtypeStruct((M, N), jnp.bfloat16),
        grid=(M // BLOCK_M, K // BLOCK_K),
        in_specs=[
            pl.BlockSpec((BLOCK_M, BLOCK_K), lambda i, k: (i, k)),
            pl.BlockSpec((BLOCK_K, N), lambda i, k: (k, 0)),
            pl.BlockSpec((1, N), lambda i, k: (0, 0)),
        ],
        out_specs=pl.BlockSpec((BLOCK_M, N), lambda i, k: (i, 0)),
        scratch_shapes=[pltpu.VMEM((BLOCK_M, N), jnp.bfloat16)],
        compiler_params=pltpu.CompilerParams(vmem_limit_bytes=32 * 1024 * 1024),
    )(x, w, b)
