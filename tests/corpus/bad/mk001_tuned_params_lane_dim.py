"""MK001 via a JAXBench TUNED_PARAMS dict: block_n = 96 on a 4096-wide output."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

CONFIG = {"M": 2048, "N": 4096, "dtype": jnp.float32}
TUNED_PARAMS = {"block_m": 256, "block_n": 96}


def _gelu_kernel(x_ref, o_ref):
    o_ref[...] = jax.nn.gelu(x_ref[...])


def workload(x):
    bm, bn = TUNED_PARAMS["block_m"], TUNED_PARAMS["block_n"]
    spec = pl.BlockSpec(
        (bm, bn),  # expect: MK001
        lambda i, j: (i, j),
    )
    return pl.pallas_call(
        _gelu_kernel,
        out_shape=jax.ShapeDtypeStruct((CONFIG["M"], CONFIG["N"]), CONFIG["dtype"]),
        grid=(CONFIG["M"] // bm, pl.cdiv(CONFIG["N"], bn)),
        in_specs=[spec],
        out_specs=spec,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel")),
    )(x)


def corpus_entry():
    return workload, (jax.ShapeDtypeStruct((CONFIG["M"], CONFIG["N"]), CONFIG["dtype"]),)
