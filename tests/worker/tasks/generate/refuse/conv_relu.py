"""generate tests: a strided convolution, which no template covers (no_template naming it; the
conv2d template covers unit strides)."""
import jax
import jax.numpy as jnp


def reference(x, w):
    y = jax.lax.conv_general_dilated(x, w, (2, 2), "SAME")  # line 8: the conv
    return jnp.maximum(y, 0.0)


def make_inputs(key):
    kx, kw = jax.random.split(key)
    return jax.random.normal(kx, (2, 4, 16, 16)), jax.random.normal(kw, (8, 4, 3, 3))
