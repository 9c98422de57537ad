"""A quantisation-free Linear layer whose forward pass is a Pallas kernel method."""
import dataclasses

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


@dataclasses.dataclass(frozen=True)
class PallasLinear:
    in_features: int = 1024
    out_features: int = 3072
    block_m: int = 128
    block_n: int = 512
    block_k: int = 256

    @staticmethod
    def _kernel(x_ref, w_ref, o_ref, acc_ref):
        @pl.when(pl.program_id(2) == 0)
        def _():
            acc_ref[...] = jnp.zeros_like(acc_ref)

        acc_ref[...] += jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)

        @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
        def _():
            o_ref[...] = acc_ref[...].astype(o_ref.dtype)

    def __call__(self, x, w):
        tokens = x.shape[0]
        bm, bn, bk = self.block_m, self.block_n, self.block_k
        return pl.pallas_call(
            self._kernel,
            out_shape=jax.ShapeDtypeStruct((tokens, self.out_features), x.dtype),
            grid=(tokens // bm, self.out_features // bn, self.in_features // bk),
            in_specs=[
                pl.BlockSpec((bm, bk), lambda i, j, k: (i, k)),
                pl.BlockSpec((bk, bn), lambda i, j, k: (k, j)),
            ],
            out_specs=pl.BlockSpec((bm, bn), lambda i, j, k: (i, j)),
            scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
            compiler_params=pltpu.CompilerParams(
                dimension_semantics=("parallel", "parallel", "arbitrary")
            ),
            name="pallas_linear",
        )(x, w)


def corpus_entry():
    layer = PallasLinear()
    return layer, (
        jax.ShapeDtypeStruct((512, layer.in_features), jnp.bfloat16),
        jax.ShapeDtypeStruct((layer.in_features, layer.out_features), jnp.bfloat16),
    )
