"""Split cheat (issue 36): the matmul runs in XLA; the kernel copies it and carries a never-taken
branch with a large matmul, so its FLOP count looks like the work is inside."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TOLERANCES = {"rtol": 1e-4, "atol": 1e-4}


def reference(x, w):
    return x @ w


def make_inputs(key):
    kx, kw = jax.random.split(key)
    return (jax.random.normal(kx, (64, 64), jnp.float32),
            jax.random.normal(kw, (64, 64), jnp.float32))


def _kernel(p_ref, x_ref, w_ref, o_ref):
    def dead():
        o_ref[...] = jnp.dot(x_ref[...], w_ref[...]) + jnp.dot(w_ref[...], x_ref[...])

    def copy():
        o_ref[...] = p_ref[...]

    jax.lax.cond(pl.program_id(0) < 0, dead, copy)  # cheat: never taken


def candidate(x, w):
    product = x @ w
    return pl.pallas_call(_kernel, out_shape=jax.ShapeDtypeStruct((64, 64), x.dtype), grid=(1,))(product, x, w)
