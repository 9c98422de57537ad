"""A tiled bf16 matmul with an f32 VMEM accumulator, in JAXBench form (CONFIG, create_inputs,
workload, get_flops, TUNED_PARAMS). Hover the pallas_call to see blocks, VMEM per step and grid."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

CONFIG = {"M": 2048, "N": 2048, "K": 2048, "dtype": "bfloat16"}
TUNED_PARAMS = {"block_m": 512, "block_n": 512, "block_k": 512}


def matmul_kernel(a_ref, b_ref, o_ref, acc_ref):
    @pl.when(pl.program_id(2) == 0)
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)

    @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
    def _store():
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)


@functools.partial(jax.jit, static_argnames=("interpret",))
def workload(a, b, interpret=False):
    m, n, k = CONFIG["M"], CONFIG["N"], CONFIG["K"]
    bm, bn, bk = TUNED_PARAMS["block_m"], TUNED_PARAMS["block_n"], TUNED_PARAMS["block_k"]
    return pl.pallas_call(
        matmul_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.bfloat16),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[
            pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
            pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j)),
        ],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "arbitrary")),
        interpret=interpret,
    )(a, b)


def create_inputs(key=jax.random.PRNGKey(0)):
    ka, kb = jax.random.split(key)
    a = jax.random.normal(ka, (CONFIG["M"], CONFIG["K"]), dtype=jnp.bfloat16)
    b = jax.random.normal(kb, (CONFIG["K"], CONFIG["N"]), dtype=jnp.bfloat16)
    return a, b


def get_flops():
    return 2 * CONFIG["M"] * CONFIG["N"] * CONFIG["K"]
