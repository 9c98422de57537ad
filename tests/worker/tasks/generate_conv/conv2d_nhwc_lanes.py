"""generate tests: a 2-D convolution of a channels-last image whose channels are not a multiple of
128 (XLA keeps it with W in the lanes) + per-channel bias + ReLU. The tests replace the sizes,
the padding, the strides and the dtype lines."""
import jax
import jax.numpy as jnp

N, H, W, CIN, COUT, KH, KW = 2, 10, 256, 8, 16, 3, 3
PADDING = "SAME"
STRIDES = (1, 1)
DTYPE = jnp.float32
TOLERANCES = {"rtol": 1e-4, "atol": 1e-4}


def reference(x, w, b):
    y = jax.lax.conv_general_dilated(x, w, window_strides=STRIDES, padding=PADDING,
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return jax.nn.relu(y + b)


def make_inputs(key):
    kx, kw, kb = jax.random.split(key, 3)
    x = jax.random.normal(kx, (N, H, W, CIN), jnp.float32).astype(DTYPE)
    w = (jax.random.normal(kw, (KH, KW, CIN, COUT), jnp.float32) * 0.1).astype(DTYPE)
    b = jax.random.normal(kb, (COUT,), jnp.float32).astype(DTYPE)
    return x, w, b
