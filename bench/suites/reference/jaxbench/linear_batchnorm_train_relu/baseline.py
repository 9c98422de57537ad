"""Linear layer, BatchNorm in training mode (statistics over the batch), ReLU."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "linear_batchnorm_train_relu", "batch": 4096, "d_in": 8192, "d_out": 8192,
          "eps": 1e-5}


def create_inputs(dtype=jnp.float32):
    ks = jax.random.split(jax.random.key(305), 4)
    n, k, c = CONFIG["batch"], CONFIG["d_in"], CONFIG["d_out"]
    x = jax.random.normal(ks[0], (n, k), dtype=dtype)
    w = jax.random.normal(ks[1], (k, c), dtype=dtype) * k ** -0.5
    gamma = jax.random.uniform(ks[2], (c,), dtype=dtype, minval=0.5, maxval=1.5)
    beta = jax.random.normal(ks[3], (c,), dtype=dtype) * 0.1
    return x, w, gamma, beta


def workload(x, w, gamma, beta):
    y = jnp.matmul(x, w)
    mean = jnp.mean(y, axis=0, keepdims=True)
    var = jnp.var(y, axis=0, keepdims=True)
    return jax.nn.relu(gamma * (y - mean) / jnp.sqrt(var + CONFIG["eps"]) + beta)
