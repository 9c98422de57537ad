"""Claims task whose inputs function returns a normal input, an all-zero one and a constant one:
the worker must say so in `warnings` (the candidate is still checked and is right)."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

ROWS, COLS = 8, 128
TOLERANCES = {"rtol": 1e-6, "atol": 1e-6}


def reference(x, zeros, sevens):
    return x + zeros * sevens


def make_inputs(key):
    return (jax.random.normal(key, (ROWS, COLS), jnp.float32),
            jnp.zeros((ROWS, COLS), jnp.float32),
            jnp.full((ROWS, COLS), 7.0, jnp.float32))


def _kernel(x_ref, z_ref, s_ref, o_ref):
    o_ref[...] = x_ref[...] + z_ref[...] * s_ref[...]


def candidate(x, zeros, sevens):
    spec = pl.BlockSpec((ROWS, COLS), lambda i: (0, 0))
    return pl.pallas_call(_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(1,),
                          in_specs=[spec, spec, spec], out_specs=spec)(x, zeros, sevens)
