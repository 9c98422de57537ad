"""generate tests (attention): JAXBench form, non-causal attention written with matmuls,
(batch, heads, seq, head_dim) float32, a hand-written max-subtracted softmax, output merged to
(batch, seq, heads * head_dim)."""
import jax
import jax.numpy as jnp

CONFIG = {"batch": 1, "heads": 2, "seq": 256, "head_dim": 128, "dtype": jnp.float32}
TOLERANCES = {"rtol": 1e-4, "atol": 1e-4}


def create_inputs(dtype=CONFIG["dtype"]):
    kq, kk, kv = jax.random.split(jax.random.key(21), 3)
    shape = (CONFIG["batch"], CONFIG["heads"], CONFIG["seq"], CONFIG["head_dim"])
    return (jax.random.normal(kq, shape, dtype), jax.random.normal(kk, shape, dtype),
            jax.random.normal(kv, shape, dtype))


def workload(q, k, v):
    s = q @ jnp.swapaxes(k, -1, -2) * (CONFIG["head_dim"] ** -0.5)
    s = s - jnp.max(s, axis=-1, keepdims=True)
    e = jnp.exp(s)
    o = (e / jnp.sum(e, axis=-1, keepdims=True)) @ v
    b, h, n, d = o.shape
    return jnp.swapaxes(o, 1, 2).reshape(b, n, h * d)


def get_flops():
    c = CONFIG
    return 4 * c["batch"] * c["heads"] * c["seq"] * c["seq"] * c["head_dim"]
