"""Reads past its VMEM block at run time (a dynamic index): TPU interpret
mode raises an out-of-bounds error while the kernel runs."""
import jax
from jax.experimental import pallas as pl


def _kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[pl.ds(pl.program_id(0) + 8, 16), :] + y_ref[...]   # OOB_LINE


def candidate(x, y):
    spec = pl.BlockSpec((16, 128), lambda i: (i, 0))
    return pl.pallas_call(_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(4,),
                          in_specs=[spec, spec], out_specs=spec)(x, y)
