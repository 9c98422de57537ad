"""Matmul + non-negative bias + reshape by a static size, for the shrink tests: at factor 2 every
dim (256, 512, 384) halves, K stays equal on both sides and the static `out_features` follows."""
import jax
import jax.numpy as jnp

CONFIG = {"batch": 256, "in_features": 512, "out_features": 384}


def create_inputs(dtype=jnp.float32):
    k1, k2, k3 = jax.random.split(jax.random.key(11), 3)
    x = jax.random.normal(k1, (CONFIG["batch"], CONFIG["in_features"]), dtype)
    w = jax.random.normal(k2, (CONFIG["in_features"], CONFIG["out_features"]), dtype) * 0.05
    bias = jax.random.uniform(k3, (CONFIG["out_features"],), dtype, minval=0.5, maxval=2.0)
    return x, w, bias, CONFIG["out_features"]


def workload(x, w, bias, out_features):
    y = jnp.log(bias) + x @ w  # log: the bias must stay positive at every instance
    return y.reshape(-1, out_features)
