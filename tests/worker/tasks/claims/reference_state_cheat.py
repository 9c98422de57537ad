"""Candidate for reference_state.py: the right kernel (2 * x), but importing it changes the state
the reference reads, so every later reference run disagrees with the frozen golden output."""
import os

import jax
from jax.experimental import pallas as pl

os.environ["MK_CLAIMS_SCALE"] = "3"


def _kernel(x_ref, o_ref):
    o_ref[...] = 2.0 * x_ref[...]


def candidate(x):
    spec = pl.BlockSpec((8, 128), lambda i: (0, 0))
    return pl.pallas_call(_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(1,),
                          in_specs=[spec], out_specs=spec)(x)
