"""JAXBench-style bf16 GEMM with a TUNED_PARAMS table keyed by problem size."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

CONFIG = {"M": 4096, "N": 4096, "K": 4096, "dtype": jnp.bfloat16}
TUNED_PARAMS = {
    "block_m": 512,
    "block_n": 512,
    "block_k": 1024,
    "vmem_limit_bytes": 64 * 1024 * 1024,
}


def _kernel(x_ref, y_ref, o_ref, acc_ref):
    k = pl.program_id(2)

    @pl.when(k == 0)
    def _():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    @pl.when(k == pl.num_programs(2) - 1)
    def _():
        o_ref[...] = acc_ref[...].astype(jnp.bfloat16)


def create_inputs(dtype=CONFIG["dtype"]):
    kx, ky = jax.random.split(jax.random.key(42))
    x = jax.random.normal(kx, (CONFIG["M"], CONFIG["K"]), dtype)
    y = jax.random.normal(ky, (CONFIG["K"], CONFIG["N"]), dtype)
    return x, y


def workload(x, y):
    tm, tn, tk = (TUNED_PARAMS[k] for k in ("block_m", "block_n", "block_k"))
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((CONFIG["M"], CONFIG["N"]), CONFIG["dtype"]),
        grid=(CONFIG["M"] // tm, CONFIG["N"] // tn, CONFIG["K"] // tk),
        in_specs=[
            pl.BlockSpec((tm, tk), lambda i, j, k: (i, k)),
            pl.BlockSpec((tk, tn), lambda i, j, k: (k, j)),
        ],
        out_specs=pl.BlockSpec((tm, tn), lambda i, j, k: (i, j)),
        scratch_shapes=[pltpu.VMEM((tm, tn), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary"),
            vmem_limit_bytes=TUNED_PARAMS["vmem_limit_bytes"],
        ),
    )(x, y)


def get_flops():
    return 2 * CONFIG["M"] * CONFIG["N"] * CONFIG["K"]


def corpus_entry():
    return workload, (
        jax.ShapeDtypeStruct((CONFIG["M"], CONFIG["K"]), CONFIG["dtype"]),
        jax.ShapeDtypeStruct((CONFIG["K"], CONFIG["N"]), CONFIG["dtype"]),
    )
