"""The MoE up projection of all experts at once: tokens sorted by expert, one weight per expert
(`jax.lax.ragged_dot` with the routed group sizes), SiLU after, bfloat16."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "moe_grouped_up_proj_bf16", "tokens": 8192, "d_model": 4096, "d_ff": 14336,
          "experts": 8}


def create_inputs(dtype=jnp.bfloat16):
    kx, kw, kr = jax.random.split(jax.random.key(337), 3)
    t, d, f, e = CONFIG["tokens"], CONFIG["d_model"], CONFIG["d_ff"], CONFIG["experts"]
    x = jax.random.normal(kx, (t, d), dtype=dtype)
    w = (jax.random.normal(kw, (e, d, f), dtype=jnp.float32) * d ** -0.5).astype(dtype)
    # Each token routed to one expert; the group sizes are the tokens per expert (they sum to
    # the token count at any size the inputs are made at).
    expert = jax.random.randint(kr, (t,), 0, e)
    group_sizes = jnp.sum(expert[:, None] == jnp.arange(e)[None, :], axis=0).astype(jnp.int32)
    return x, w, group_sizes


def workload(x, w, group_sizes):
    return jax.nn.silu(jax.lax.ragged_dot(x, w, group_sizes))
