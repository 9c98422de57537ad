"""generate tests: a convolution, which no template covers (no_template naming it)."""
import jax
import jax.numpy as jnp


def reference(x, w):
    y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME")  # line 7: the conv
    return jnp.maximum(y, 0.0)


def make_inputs(key):
    kx, kw = jax.random.split(key)
    return jax.random.normal(kx, (2, 4, 16, 16)), jax.random.normal(kw, (8, 4, 3, 3))
