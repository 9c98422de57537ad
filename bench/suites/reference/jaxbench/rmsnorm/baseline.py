"""RMSNorm over the model dimension with a learned scale."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "rmsnorm", "tokens": 8192, "d_model": 8192, "eps": 1e-6}


def create_inputs(dtype=jnp.float32):
    kx, kw = jax.random.split(jax.random.key(105))
    x = jax.random.normal(kx, (CONFIG["tokens"], CONFIG["d_model"]), dtype=dtype) * 2.0
    w = jax.random.uniform(kw, (CONFIG["d_model"],), dtype=dtype, minval=0.5, maxval=1.5)
    return x, w


def workload(x, w):
    ms = jnp.mean(jnp.square(x), axis=-1, keepdims=True)
    return x * jax.lax.rsqrt(ms + CONFIG["eps"]) * w


def get_flops():
    return 4 * CONFIG["tokens"] * CONFIG["d_model"]
