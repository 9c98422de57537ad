"""MK001 (rank-1 rule): a 1-D block of 1000 f32 elements on a 1<<20 vector is not
the full length, not a multiple of 1024 and not a power of two >= 128."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

N = 1 << 20
CHUNK = 1000


def _relu_kernel(x_ref, o_ref):
    o_ref[...] = jnp.maximum(x_ref[...], 0.0)


def relu(x):
    vec = pl.BlockSpec((CHUNK,), lambda i: (i,))  # expect: MK001
    return pl.pallas_call(
        _relu_kernel,
        out_shape=jax.ShapeDtypeStruct((N,), jnp.float32),
        grid=(pl.cdiv(N, CHUNK),),
        in_specs=[vec],
        out_specs=vec,
    )(x)


def corpus_entry():
    return relu, (jax.ShapeDtypeStruct((N,), jnp.float32),)
