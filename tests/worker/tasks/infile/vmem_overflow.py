"""In-file task whose kernel lowers for TPU but does not compile: one (8192, 8192) f32 block in and
one out (256 MiB each, double-buffered) against v5e's 128 MiB of VMEM. Only the TPU compiler
(libtpu, tpu_compiler.compiler) sees it; jax.export lowering accepts it. Compile-only: never run."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

N = 8192
TOLERANCES = {"rtol": 1e-6, "atol": 1e-6}


def reference(x):
    return 2.0 * x


def make_inputs(key):
    return (jax.random.normal(key, (N, N), jnp.float32),)


def _kernel(x_ref, o_ref):
    o_ref[...] = 2.0 * x_ref[...]


def candidate(x):
    return pl.pallas_call(  # PALLAS_CALL_LINE
        _kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
    )(x)
