"""int8 weight-only-quantised matmul: int8 x int8 -> int32 accumulate, per-column rescale."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

# int8 packs 4 rows per sublane: sublane block dims are multiples of 32.
TM, TN, TK = 256, 512, 1024
M, N, K = 1024, 4096, 4096


def _int8_matmul_kernel(x_ref, w_ref, scale_ref, o_ref, acc_ref):
    k = pl.program_id(2)

    @pl.when(k == 0)
    def _zero():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.int32)

    @pl.when(k == pl.num_programs(2) - 1)
    def _epilogue():
        acc = acc_ref[...].astype(jnp.float32)
        o_ref[...] = (acc * scale_ref[...]).astype(o_ref.dtype)


def int8_matmul(x_q, w_q, col_scale):
    """x_q: (M, K) int8, w_q: (K, N) int8, col_scale: (1, N) f32."""
    return pl.pallas_call(
        _int8_matmul_kernel,
        out_shape=jax.ShapeDtypeStruct((M, N), jnp.bfloat16),
        grid=(M // TM, N // TN, K // TK),
        in_specs=[
            pl.BlockSpec((TM, TK), lambda i, j, k: (i, k)),
            pl.BlockSpec((TK, TN), lambda i, j, k: (k, j)),
            pl.BlockSpec((1, TN), lambda i, j, k: (0, j)),  # 1 == full dim
        ],
        out_specs=pl.BlockSpec((TM, TN), lambda i, j, k: (i, j)),
        scratch_shapes=[pltpu.VMEM((TM, TN), jnp.int32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary"),
        ),
    )(x_q, w_q, col_scale)


def corpus_entry():
    return int8_matmul, (
        jax.ShapeDtypeStruct((M, K), jnp.int8),
        jax.ShapeDtypeStruct((K, N), jnp.int8),
        jax.ShapeDtypeStruct((1, N), jnp.float32),
    )
