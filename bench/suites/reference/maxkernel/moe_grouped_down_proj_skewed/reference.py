# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.bfloat16):
    tokens, d_ff, d_model = 8192, 14336, 4096
    kx, kw, kr = jax.random.split(jax.random.key(341), 3)
    h = jax.random.normal(kx, (tokens, d_ff), dtype=dtype)
    w = (jax.random.normal(kw, (8, d_ff, d_model), dtype=jnp.float32) * d_ff ** -0.5).astype(dtype)
    # Skewed routing: expert 0 gets a third of the tokens, expert 7 none (an empty group).
    share = jnp.array([0.34, 0.2, 0.14, 0.1, 0.09, 0.08, 0.05, 0.0])
    expert = jax.random.categorical(kr, jnp.log(share), shape=(tokens,))
    group_sizes = jnp.sum(expert[:, None] == jnp.arange(8)[None, :], axis=0).astype(jnp.int32)
    dynamic_args = [h, w, group_sizes]
    static_args = []
    return dynamic_args, static_args


# Computation
def computation(h, w, group_sizes):
    return jax.lax.ragged_dot(h, w, group_sizes, preferred_element_type=jnp.float32)
