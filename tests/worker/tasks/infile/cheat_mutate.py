"""Cheat: writes the result into x's buffer (donated, aliased): the caller's
input is destroyed."""
import functools

import jax
from jax.experimental import pallas as pl


def _kernel(x_ref, y_ref, o_ref):
    o_ref[...] = 2.0 * x_ref[...] + y_ref[...]


@functools.partial(jax.jit, donate_argnums=(0,))
def candidate(x, y):
    spec = pl.BlockSpec((16, 128), lambda i: (i, 0))
    return pl.pallas_call(_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(4,), in_specs=[spec, spec], out_specs=spec,
                          input_output_aliases={0: 0})(x, y)
