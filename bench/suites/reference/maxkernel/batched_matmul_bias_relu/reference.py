# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.float32):
    batch, m, k, n = 16, 2048, 1024, 2048
    ka, kb, kc = jax.random.split(jax.random.key(201), 3)
    a = jax.random.normal(ka, (batch, m, k), dtype=dtype)
    b = jax.random.normal(kb, (batch, k, n), dtype=dtype) * 0.03
    bias = jax.random.normal(kc, (n,), dtype=dtype) * 0.1
    dynamic_args = [a, b, bias]
    static_args = []
    return dynamic_args, static_args


# Computation
def computation(a, b, bias):
    return jax.nn.relu(jnp.einsum("bmk,bkn->bmn", a, b) + bias)
