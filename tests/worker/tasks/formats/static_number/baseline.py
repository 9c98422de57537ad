"""JAXBench-layout task whose create_inputs returns a Python int used as a shape
(a capacity, like an MoE's max_expert_size): it must be a static argument."""
import jax
import jax.numpy as jnp

CONFIG = {"tokens": 64, "dim": 128, "groups": 16}


def create_inputs(dtype=jnp.float32):
    kx, kw = jax.random.split(jax.random.key(7))
    x = jax.random.normal(kx, (CONFIG["tokens"], CONFIG["dim"]), dtype)
    w = jax.random.normal(kw, (CONFIG["dim"], CONFIG["dim"]), dtype)
    return x, w, CONFIG["groups"]


def workload(x, w, groups):
    # `groups` is a shape: tracing it as an array would fail.
    y = (x @ w).reshape(groups, -1, x.shape[-1])
    return jnp.sum(y, axis=0)
