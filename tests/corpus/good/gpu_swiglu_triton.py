"""Fused SwiGLU activation on GPU (Triton): silu(gate) * up, (16, 32) tiles."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TOKENS, HIDDEN = 1024, 1024
TILE = (16, 32)


def _swiglu_kernel(gate_ref, up_ref, out_ref):
    g = gate_ref[...].astype(jnp.float32)
    u = up_ref[...].astype(jnp.float32)
    out_ref[...] = (g * jax.nn.sigmoid(g) * u).astype(out_ref.dtype)


def swiglu(gate, up):
    spec = pl.BlockSpec(TILE, lambda i, j: (i, j))
    return pl.pallas_call(
        _swiglu_kernel,
        out_shape=jax.ShapeDtypeStruct(gate.shape, gate.dtype),
        grid=(TOKENS // TILE[0], HIDDEN // TILE[1]),
        in_specs=[spec, spec],
        out_specs=spec,
        compiler_params=plgpu.CompilerParams(num_warps=2, num_stages=1),
    )(gate, up)


def corpus_entry():
    x = jax.ShapeDtypeStruct((TOKENS, HIDDEN), jnp.bfloat16)
    return swiglu, (x, x)
