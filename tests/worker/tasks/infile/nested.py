"""pallas_calls nested in jit, custom_vjp, lax.cond and lax.scan."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def reference(x):
    return jnp.where(jnp.sum(x) > 0, 2.0 * x, 2.0 * x) * 2.0 ** 3


def make_inputs(key):
    return (jax.random.normal(key, (16, 128), jnp.float32),)


def _double_kernel(x_ref, o_ref):
    o_ref[...] = 2.0 * x_ref[...]


def _double(x):
    return pl.pallas_call(_double_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


@jax.custom_vjp
def double_vjp(x):
    return _double(x)


double_vjp.defvjp(lambda x: (_double(x), None), lambda _, g: (2.0 * g,))


@jax.jit
def candidate(x):
    y = jax.lax.cond(jnp.sum(x) > 0, double_vjp, _double, x)

    def body(c, _):
        return _double(c), None

    y, _ = jax.lax.scan(body, y, None, length=3)
    return y
