"""Claims task whose reference reads process state at run time (a host callback reading an
environment variable): out = s * x with s = $MK_CLAIMS_SCALE, default 2. The frozen golden output
is computed before any candidate code runs; reference_state_cheat.py changes the variable when
it is imported, so the reference no longer reproduces its own golden output."""
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl

ROWS, COLS = 8, 128
TOLERANCES = {"rtol": 1e-6, "atol": 1e-6}


def _scale():
    return np.float32(float(os.environ.get("MK_CLAIMS_SCALE", "2")))


def reference(x):
    return jax.pure_callback(_scale, jax.ShapeDtypeStruct((), jnp.float32)) * x


def make_inputs(key):
    return (jax.random.normal(key, (ROWS, COLS), jnp.float32),)


def _kernel(x_ref, o_ref):
    o_ref[...] = 2.0 * x_ref[...]


def candidate(x):
    spec = pl.BlockSpec((ROWS, COLS), lambda i: (0, 0))
    return pl.pallas_call(_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(1,),
                          in_specs=[spec], out_specs=spec)(x)
