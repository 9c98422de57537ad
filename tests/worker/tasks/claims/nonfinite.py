"""Claims task whose reference has NaN, +Inf and -Inf: sqrt(x), with +Inf where x > 1.5 and -Inf
where x < -1.5 (x ~ N(0, 1): NaN for -1.5 <= x < 0). `candidate` reproduces them; each other
entry point gets one kind of special value wrong."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

ROWS, COLS = 16, 128
TOLERANCES = {"rtol": 1e-5, "atol": 1e-5}


def _special(x):
    return jnp.where(x > 1.5, jnp.inf, jnp.where(x < -1.5, -jnp.inf, jnp.sqrt(x)))


def reference(x):
    return _special(x)


def make_inputs(key):
    return (jax.random.normal(key, (ROWS, COLS), jnp.float32),)


def _call(body, x):
    spec = pl.BlockSpec((8, COLS), lambda i: (i, 0))

    def kernel(x_ref, o_ref):
        o_ref[...] = body(x_ref[...])

    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(ROWS // 8,), in_specs=[spec], out_specs=spec)(x)


def candidate(x):
    return _call(_special, x)


def finite_where_nan(x):
    # sqrt(|x|) where the reference has NaN: finite, and wrong.
    return _call(lambda v: jnp.where((v < 0) & (v >= -1.5), jnp.sqrt(-v), _special(v)), x)


def nan_where_finite(x):
    return _call(lambda v: jnp.where((v >= 0) & (v < 0.5), jnp.nan, _special(v)), x)


def inf_sign_flipped(x):
    return _call(lambda v: jnp.where(v > 1.5, -jnp.inf, _special(v)), x)
