"""A bf16 GEMM at 8192^3 with large blocks (1024 x 2048 x 1024), written the way tuned expert
GEMMs are: block sizes as keyword-only arguments, the kernel specialised with functools.partial,
and the accumulator dtype bound to the same local name in more than one function."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

M = N = K = 8192
TOLERANCES = {"rtol": 2e-2, "atol": 2e-2}


def accumulator_dtype():
    dt = jnp.float32
    return dt


def storage_dtype():
    dt = jnp.bfloat16
    return dt


def reference(a, b):
    return jnp.dot(a, b, preferred_element_type=accumulator_dtype()).astype(storage_dtype())


def make_inputs(key):
    ka, kb = jax.random.split(key)
    dt = storage_dtype()
    return jax.random.normal(ka, (M, K), dt), jax.random.normal(kb, (K, N), dt)


def _gemm_body(a_ref, b_ref, o_ref, acc_ref, *, k_steps: int):
    k = pl.program_id(2)

    @pl.when(k == 0)
    def _zero():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(a_ref[...], b_ref[...], preferred_element_type=acc_ref.dtype)

    @pl.when(k == k_steps - 1)
    def _flush():
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)


@functools.partial(jax.jit, static_argnames=("bm", "bn", "bk"))
def gemm(a, b, *, bm: int = 1024, bn: int = 2048, bk: int = 1024):
    m, k = a.shape
    _, n = b.shape
    dt = accumulator_dtype()
    body = functools.partial(_gemm_body, k_steps=k // bk)
    block_bytes = 2 * 2 * (bm * bk + bk * bn + bm * bn) + 4 * bm * bn
    return pl.pallas_call(
        body,
        out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                  pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), dt)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary"),
            vmem_limit_bytes=block_bytes + (8 << 20)),
    )(a, b)


def candidate(a, b):
    return gemm(a, b)
