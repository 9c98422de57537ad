"""MK003: an index_map written as a `def` that takes one parameter too many for
the 3-D grid (no scalar prefetch here, so it receives exactly 3 indices)."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

B, H, S, D = 4, 16, 1024, 128
TS = 512


def _rope_kernel(x_ref, cos_ref, sin_ref, o_ref):
    x = x_ref[...]
    half = D // 2
    rotated = jnp.concatenate([-x[:, half:], x[:, :half]], axis=-1)
    o_ref[...] = x * cos_ref[...] + rotated * sin_ref[...]


def x_index_map(b, h, s, seq_lens):  # expect: MK003
    return (b, h, s, 0)


def table_index_map(b, h, s):
    return (s, 0)


def rope(x, cos, sin):
    table_spec = pl.BlockSpec((TS, D), table_index_map)
    return pl.pallas_call(
        _rope_kernel,
        out_shape=jax.ShapeDtypeStruct((B, H, S, D), jnp.float32),
        grid=(B, H, S // TS),
        in_specs=[pl.BlockSpec((None, None, TS, D), x_index_map), table_spec, table_spec],
        out_specs=pl.BlockSpec((None, None, TS, D), lambda b, h, s: (b, h, s, 0)),
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "parallel")),
    )(x, cos, sin)


def corpus_entry():
    t = jax.ShapeDtypeStruct((S, D), jnp.float32)
    return rope, (jax.ShapeDtypeStruct((B, H, S, D), jnp.float32), t, t)
