"""Split cheat (issue 36): the matmul is done outside the kernel in a `while_loop` of rank-one updates,
whose body the work counter counted once."""
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


def _zeros_kernel(x_ref, o_ref):
    o_ref[...] = jnp.zeros_like(o_ref)


def candidate(x, w):
    acc = pl.pallas_call(_zeros_kernel, out_shape=jax.ShapeDtypeStruct((64, 64), x.dtype))(x)
    steps = 64 + 0 * x[0, 0].astype(jnp.int32)  # a bound the tracer cannot see

    def body(carry):
        k, a = carry
        row = jax.lax.dynamic_index_in_dim(x, k, axis=1, keepdims=True)
        col = jax.lax.dynamic_index_in_dim(w, k, axis=0, keepdims=True)
        return k + 1, a + row * col  # cheat

    return jax.lax.while_loop(lambda c: c[0] < steps, body, (0, acc))[1]
