"""JAXBench-style f32 GEMM workload: CONFIG / TUNED_PARAMS / create_inputs / workload."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

CONFIG = {
    "name": "gemm_f32_2048x2048x2048",
    "M": 2048,
    "N": 2048,
    "K": 2048,
    "dtype": jnp.float32,
}

TUNED_PARAMS = {"block_m": 512, "block_n": 256, "block_k": 256}


def _gemm_kernel(a_ref, b_ref, c_ref, acc_ref):
    k_step = pl.program_id(2)

    @pl.when(k_step == 0)
    def _():
        acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)

    acc_ref[...] += jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)

    @pl.when(k_step == pl.num_programs(2) - 1)
    def _():
        c_ref[...] = acc_ref[...]


def create_inputs(key=None):
    key = jax.random.PRNGKey(0) if key is None else key
    ka, kb = jax.random.split(key)
    a = jax.random.normal(ka, (CONFIG["M"], CONFIG["K"]), CONFIG["dtype"])
    b = jax.random.normal(kb, (CONFIG["K"], CONFIG["N"]), CONFIG["dtype"])
    return a, b


def workload(a, b):
    bm = TUNED_PARAMS["block_m"]
    bn = TUNED_PARAMS["block_n"]
    bk = TUNED_PARAMS["block_k"]
    M, N, K = CONFIG["M"], CONFIG["N"], CONFIG["K"]
    return pl.pallas_call(
        _gemm_kernel,
        out_shape=jax.ShapeDtypeStruct((M, N), CONFIG["dtype"]),
        grid=(M // bm, N // bn, K // bk),
        in_specs=[
            pl.BlockSpec((bm, bk), lambda i, j, k: (i, k)),
            pl.BlockSpec((bk, bn), lambda i, j, k: (k, j)),
        ],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, k: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")
        ),
    )(a, b)


def get_flops():
    return 2 * CONFIG["M"] * CONFIG["N"] * CONFIG["K"]


def corpus_entry():
    args = (
        jax.ShapeDtypeStruct((CONFIG["M"], CONFIG["K"]), CONFIG["dtype"]),
        jax.ShapeDtypeStruct((CONFIG["K"], CONFIG["N"]), CONFIG["dtype"]),
    )
    return workload, args
