"""One MoE expert's SwiGLU FFN on its routed tokens, weights stored (out, in), bfloat16."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "moe_expert_mlp_bf16", "tokens": 2048, "d_model": 4096, "d_ff": 14336}


def create_inputs(dtype=jnp.bfloat16):
    kx, k1, k3, k2 = jax.random.split(jax.random.key(313), 4)
    t, d, f = CONFIG["tokens"], CONFIG["d_model"], CONFIG["d_ff"]
    x = jax.random.normal(kx, (t, d), dtype=dtype)
    w1 = (jax.random.normal(k1, (f, d), dtype=jnp.float32) * d ** -0.5).astype(dtype)
    w3 = (jax.random.normal(k3, (f, d), dtype=jnp.float32) * d ** -0.5).astype(dtype)
    w2 = (jax.random.normal(k2, (d, f), dtype=jnp.float32) * f ** -0.5).astype(dtype)
    return x, w1, w3, w2


def workload(x, w1, w3, w2):
    h = jax.nn.silu(x @ w1.T) * (x @ w3.T)
    return h @ w2.T
