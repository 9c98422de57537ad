"""Claims task with integer and bool outputs under tolerances so loose (rtol 0.5, atol 100) that
a float compare would let any small error through: integer and bool outputs must still match
exactly. `candidate` is right; `off_by_one` adds 1 to one element, `one_flipped` flips one bool."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

ROWS, COLS = 8, 128
TOLERANCES = {"rtol": 0.5, "atol": 100.0}


def reference(x):
    return x * 3 + 1, x > 0


def make_inputs(key):
    return (jax.random.randint(key, (ROWS, COLS), -50, 50, jnp.int32),)


def _kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 3 + 1


def _call(x):
    spec = pl.BlockSpec((ROWS, COLS), lambda i: (0, 0))
    return pl.pallas_call(_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(1,), in_specs=[spec], out_specs=spec)(x)


def candidate(x):
    out = _call(x)
    return out, (out - 1) > 0


def off_by_one(x):
    out = _call(x)
    return out.at[0, 0].add(1), (out - 1) > 0


def one_flipped(x):
    out = _call(x)
    flags = (out - 1) > 0
    return out, flags.at[0, 0].set(~flags[0, 0])
