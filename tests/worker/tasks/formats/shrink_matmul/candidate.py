import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

BLOCK_ROWS = 64


def _kernel(x_ref, w_ref, b_ref, o_ref):
    o_ref[...] = jnp.log(b_ref[...]) + jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)


def workload(x, w, bias, out_features):
    m, k = x.shape
    n = w.shape[1]
    y = pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // BLOCK_ROWS,),
        in_specs=[pl.BlockSpec((BLOCK_ROWS, k), lambda i: (i, 0)),
                  pl.BlockSpec((k, n), lambda i: (0, 0)),
                  pl.BlockSpec((1, n), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((BLOCK_ROWS, n), lambda i: (i, 0)),
    )(x, w, bias.reshape(1, n))
    return y.reshape(-1, out_features)
