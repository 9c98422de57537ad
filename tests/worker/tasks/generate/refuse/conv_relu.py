"""generate tests: a dilated convolution, which no template covers (no_template naming it; the
conv templates cover no kernel dilation)."""
import jax
import jax.numpy as jnp


def reference(x, w):
    y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", rhs_dilation=(2, 2))  # line 8: the conv
    return jnp.maximum(y, 0.0)


def make_inputs(key):
    kx, kw = jax.random.split(key)
    return jax.random.normal(kx, (2, 4, 16, 16)), jax.random.normal(kw, (8, 4, 3, 3))
