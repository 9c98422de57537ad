# generate tests: MaxKernel's published layout, matmul + softmax with a static temperature
# (matmul_row_reduction).
import jax
import jax.numpy as jnp


def get_inputs(dtype=jnp.float32):
    m, k, n = 128, 256, 512
    kx, kw = jax.random.split(jax.random.key(5))
    x = jax.random.normal(kx, (m, k), dtype=dtype)
    w = jax.random.normal(kw, (k, n), dtype=dtype) * 0.1
    dynamic_args = [x, w]
    static_args = [0.7]
    return dynamic_args, static_args


def computation(x, w, temperature):
    return jax.nn.softmax((x @ w) / temperature, axis=-1)
