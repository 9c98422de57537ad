"""generate tests: an elementwise chain over (batch, rows, cols) with a bias row, a per-row scale
column, a select and a static slope (elementwise)."""
import jax
import jax.numpy as jnp

B, R, C = 4, 64, 256
TOLERANCES = {"rtol": 1e-5, "atol": 1e-5}


def reference(x, y, bias, scale, slope):
    z = jnp.where(x > 0, x, slope * x) + bias
    return jnp.tanh(z) * scale + jnp.exp(-jnp.abs(y)) - y * y


def make_inputs(key):
    k1, k2, k3, k4 = jax.random.split(key, 4)
    return (jax.random.normal(k1, (B, R, C), jnp.float32),
            jax.random.normal(k2, (B, R, C), jnp.float32),
            jax.random.normal(k3, (C,), jnp.float32),
            jax.random.uniform(k4, (B, R, 1), jnp.float32, minval=0.5, maxval=2.0),
            0.2)
