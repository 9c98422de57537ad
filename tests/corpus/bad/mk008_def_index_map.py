"""MK008: a `def` index_map for a 2-D (S, D) table block returns only the row-block
index.  The marker sits on the returned expression."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

B, S, D = 4, 1024, 128
TS = 512


def _add_table_kernel(x_ref, t_ref, o_ref):
    o_ref[...] = x_ref[...] + t_ref[...]


def table_index_map(b, s):
    return (s,)  # expect: MK008


def add_positional(x, table):
    return pl.pallas_call(
        _add_table_kernel,
        out_shape=jax.ShapeDtypeStruct((B, S, D), jnp.float32),
        grid=(B, S // TS),
        in_specs=[
            pl.BlockSpec((None, TS, D), lambda b, s: (b, s, 0)),
            pl.BlockSpec((TS, D), table_index_map),
        ],
        out_specs=pl.BlockSpec((None, TS, D), lambda b, s: (b, s, 0)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel")),
    )(x, table)


def corpus_entry():
    return add_positional, (
        jax.ShapeDtypeStruct((B, S, D), jnp.float32),
        jax.ShapeDtypeStruct((S, D), jnp.float32),
    )
