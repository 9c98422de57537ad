"""Linear layer + bias, GroupNorm over 32 groups of channels (affine), then SiLU."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "linear_group_norm_silu", "batch": 8192, "d_in": 4096, "d_out": 8192,
          "groups": 32, "eps": 1e-5}


def create_inputs(dtype=jnp.float32):
    ks = jax.random.split(jax.random.key(304), 5)
    n, k, c = CONFIG["batch"], CONFIG["d_in"], CONFIG["d_out"]
    x = jax.random.normal(ks[0], (n, k), dtype=dtype)
    w = jax.random.normal(ks[1], (k, c), dtype=dtype) * k ** -0.5
    b = jax.random.normal(ks[2], (c,), dtype=dtype) * 0.1
    gamma = 1.0 + 0.1 * jax.random.normal(ks[3], (c,), dtype=dtype)
    beta = 0.1 * jax.random.normal(ks[4], (c,), dtype=dtype)
    return x, w, b, gamma, beta


def workload(x, w, b, gamma, beta):
    y = x @ w + b
    groups = y.reshape(y.shape[0], CONFIG["groups"], -1)
    mean = groups.mean(axis=-1, keepdims=True)
    var = ((groups - mean) ** 2).mean(axis=-1, keepdims=True)
    groups = (groups - mean) * jax.lax.rsqrt(var + CONFIG["eps"])
    return jax.nn.silu(groups.reshape(y.shape) * gamma + beta)
