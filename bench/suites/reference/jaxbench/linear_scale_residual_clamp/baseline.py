"""Projection scaled by a constant, added to the residual stream and clamped. The scale is a
Python float among the inputs: a static argument."""
import jax
import jax.numpy as jnp

CONFIG = {
    "name": "linear_scale_residual_clamp",
    "tokens": 4096,
    "d_model": 4096,
    "scale": 0.5,
    "clamp": 3.0,
}


def create_inputs(dtype=jnp.float32):
    kx, kw, kr = jax.random.split(jax.random.key(102), 3)
    d = CONFIG["d_model"]
    x = jax.random.normal(kx, (CONFIG["tokens"], d), dtype=dtype)
    w = jax.random.normal(kw, (d, d), dtype=dtype) * (1.0 / d ** 0.5)
    residual = jax.random.normal(kr, (CONFIG["tokens"], d), dtype=dtype)
    return x, w, residual, CONFIG["scale"]


def workload(x, w, residual, scale):
    y = scale * jnp.matmul(x, w) + residual
    return jnp.clip(y, -CONFIG["clamp"], CONFIG["clamp"])


def get_flops():
    return 2 * CONFIG["tokens"] * CONFIG["d_model"] ** 2
