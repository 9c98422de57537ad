"""JAXBench-style candidate: the same names as the baseline, with a Pallas
workload whose row tile comes from TUNED_PARAMS."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

CONFIG = {"M": 64, "N": 128, "dtype": jnp.float32, "eps": 1e-6}
TUNED_PARAMS = {"block_rows": 16}


def create_inputs(dtype=CONFIG["dtype"]):
    kx, kw = jax.random.split(jax.random.key(42))
    x = jax.random.normal(kx, (CONFIG["M"], CONFIG["N"]), dtype)
    w = jax.random.uniform(kw, (1, CONFIG["N"]), dtype, minval=0.5, maxval=1.5)
    return x, w


def _rmsnorm_kernel(x_ref, w_ref, o_ref):
    x = x_ref[...]
    ms = jnp.mean(x * x, axis=-1, keepdims=True)
    o_ref[...] = x * jax.lax.rsqrt(ms + CONFIG["eps"]) * w_ref[...]


def workload(x, w):
    br = TUNED_PARAMS["block_rows"]
    m, n = x.shape
    return pl.pallas_call(
        _rmsnorm_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(m // br,),
        in_specs=[pl.BlockSpec((br, n), lambda i: (i, 0)),
                  pl.BlockSpec((1, n), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((br, n), lambda i: (i, 0)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(x, w)


def get_flops():
    return 4 * CONFIG["M"] * CONFIG["N"]
