# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.float32):
    batch, seq, d_in, d_out = 16, 2048, 2048, 2048
    ks = jax.random.split(jax.random.key(373), 4)
    x = jax.random.normal(ks[0], (batch, seq, d_in), dtype=dtype) + 0.3
    w = jax.random.normal(ks[1], (d_in, d_out), dtype=dtype) * 0.02
    gamma = jax.random.uniform(ks[2], (d_out,), dtype=dtype, minval=0.5, maxval=1.5)
    beta = jax.random.normal(ks[3], (d_out,), dtype=dtype) * 0.1
    eps = 1e-5
    dynamic_args = [x, w, gamma, beta]
    static_args = [eps]
    return dynamic_args, static_args


# Computation
def computation(x, w, gamma, beta, eps):
    y = jnp.einsum("bld,de->ble", x, w)
    mean = y.mean(axis=1, keepdims=True)
    centered = y - mean
    var = (centered * centered).mean(axis=1, keepdims=True)
    return jax.nn.gelu(centered * jax.lax.rsqrt(var + eps) * gamma + beta)
