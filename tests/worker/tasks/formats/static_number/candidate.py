import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

BLOCK = 4  # rows of the summed output per step (tokens / groups = 4)


def _kernel(y_ref, o_ref):
    o_ref[...] = jnp.sum(y_ref[...], axis=0)


def workload(x, w, groups):
    y = (x @ w).reshape(groups, -1, x.shape[-1])
    g, r, d = y.shape
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((r, d), x.dtype),
        grid=(r // BLOCK,),
        in_specs=[pl.BlockSpec((g, BLOCK, d), lambda i: (0, i, 0))],
        out_specs=pl.BlockSpec((BLOCK, d), lambda i: (i, 0)),
    )(y)
