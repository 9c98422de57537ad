# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.float32):
    rows, d_in, classes = 8192, 2048, 4096
    kx, kw, kb = jax.random.split(jax.random.key(205), 3)
    x = jax.random.normal(kx, (rows, d_in), dtype=dtype)
    w = jax.random.normal(kw, (d_in, classes), dtype=dtype) * 0.03
    b = jax.random.normal(kb, (classes,), dtype=dtype) * 0.1
    dynamic_args = [x, w, b]
    static_args = []
    return dynamic_args, static_args


# Computation
def computation(x, w, b):
    return jax.nn.log_softmax(jnp.matmul(x, w) + b, axis=-1)
