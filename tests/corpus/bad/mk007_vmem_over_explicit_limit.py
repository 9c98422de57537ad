"""MK007: 1024x1024 f32 matmul tiles need 3 x 2 x 4 MiB + 4 MiB scratch = 28 MiB. The input
dtypes are not visible in this file, but the output blocks and the accumulator alone need
2 x 4 MiB + 4 MiB = 12 MiB, more than the 10 MiB that vmem_limit_bytes allows."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

M = N = K = 4096
T = 1024


def _kernel(a_ref, b_ref, o_ref, acc_ref):
    @pl.when(pl.program_id(2) == 0)
    def _():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)

    @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
    def _():
        o_ref[...] = acc_ref[...]


def matmul(a, b):
    return pltpu_call(a, b)


def pltpu_call(a, b):
    return pl.pallas_call(  # expect: MK007
        _kernel,
        out_shape=jax.ShapeDtypeStruct((M, N), jnp.float32),
        grid=(M // T, N // T, K // T),
        in_specs=[
            pl.BlockSpec((T, T), lambda i, j, k: (i, k)),
            pl.BlockSpec((T, T), lambda i, j, k: (k, j)),
        ],
        out_specs=pl.BlockSpec((T, T), lambda i, j, k: (i, j)),
        scratch_shapes=[pltpu.VMEM((T, T), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary"),
            vmem_limit_bytes=10 * 1024 * 1024,
        ),
    )(a, b)


def corpus_entry():
    x = jax.ShapeDtypeStruct((M, N), jnp.float32)
    return matmul, (x, x)
