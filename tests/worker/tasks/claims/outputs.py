"""Claims task: out = 2 * x + y on a (16, 128) array. `candidate` is right; the other entry points
are wrong in one way each, for tests/worker/test_worker_claims.py (passed as the request's
`kernel`)."""
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback
from jax.experimental import pallas as pl

ROWS, COLS = 16, 128
TOLERANCES = {"rtol": 1e-6, "atol": 1e-6}


def reference(x, y):
    return 2.0 * x + y


def make_inputs(key):
    kx, ky = jax.random.split(key)
    return (jax.random.normal(kx, (ROWS, COLS), jnp.float32),
            jax.random.normal(ky, (ROWS, COLS), jnp.float32))


def _kernel(x_ref, y_ref, o_ref):
    o_ref[...] = (2.0 * x_ref[...] + y_ref[...]).astype(o_ref.dtype)


def _call(x, y, rows=ROWS, dtype=jnp.float32):
    spec = pl.BlockSpec((8, COLS), lambda i: (i, 0))
    return pl.pallas_call(_kernel, out_shape=jax.ShapeDtypeStruct((rows, COLS), dtype),
                          grid=(rows // 8,), in_specs=[spec, spec], out_specs=spec)(x[:rows], y[:rows])


def candidate(x, y):
    return _call(x, y)


def wrong_shape(x, y):
    return _call(x, y, rows=8)  # half the rows: every element it has is right


def wrong_dtype(x, y):
    return _call(x, y, dtype=jnp.bfloat16)  # right values, rounded to bfloat16


# Correct on odd calls, off by one on even calls. The worker runs candidate, reference,
# reference, candidate per input set: this is right only when it runs before the reference.
_calls = [0]


def _parity():
    _calls[0] += 1
    return np.float32(0.0 if _calls[0] % 2 else 1.0)


def order_cheat(x, y):
    shift = io_callback(_parity, jax.ShapeDtypeStruct((), jnp.float32), ordered=True)
    return _call(x, y) + shift
