"""MK003: with PrefetchScalarGridSpec(num_scalar_prefetch=1) every index_map receives
grid indices *plus* the prefetched ref; `_kv_index_map` forgets the extra argument."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

HEADS, SEQ, HEAD_DIM = 8, 2048, 128
BQ, BK = 256, 256


def _kernel(lens_ref, q_ref, k_ref, o_ref):
    s = jax.lax.dot_general(q_ref[...], k_ref[...], (((1,), (1,)), ((), ())),
                            preferred_element_type=jnp.float32)
    o_ref[...] = s


def _q_index_map(h, qi, ki, lens_ref):
    return (h, qi, 0)


def _kv_index_map(h, qi, ki):  # expect: MK003
    return (h, ki, 0)


def scores(lens, q, k):
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((HEADS, SEQ, SEQ), jnp.float32),
        grid_spec=pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=1,
            grid=(HEADS, SEQ // BQ, SEQ // BK),
            in_specs=[
                pl.BlockSpec((None, BQ, HEAD_DIM), _q_index_map),
                pl.BlockSpec((None, BK, HEAD_DIM), _kv_index_map),
            ],
            out_specs=pl.BlockSpec((None, BQ, BK), lambda h, qi, ki, lens: (h, qi, ki)),
        ),
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "parallel")),
    )(lens, q, k)


def corpus_entry():
    x = jax.ShapeDtypeStruct((HEADS, SEQ, HEAD_DIM), jnp.bfloat16)
    return scores, (jax.ShapeDtypeStruct((HEADS,), jnp.int32), x, x)
