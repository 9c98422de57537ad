"""generate tests: a 2-D convolution in PyTorch's layout (NCHW input, OIHW weight, padding 1)
+ per-channel bias + SiLU (conv2d). The sizes line is replaced by the tests."""
import jax
import jax.numpy as jnp

N, CIN, H, W, COUT = 2, 8, 16, 16, 16
TOLERANCES = {"rtol": 1e-4, "atol": 1e-4}


def reference(x, w, b):
    y = jax.lax.conv_general_dilated(x, w, window_strides=(1, 1), padding=((1, 1), (1, 1)),
                                     dimension_numbers=("NCHW", "OIHW", "NCHW"))
    return jax.nn.silu(y + b[None, :, None, None])


def make_inputs(key):
    kx, kw, kb = jax.random.split(key, 3)
    x = jax.random.normal(kx, (N, CIN, H, W), jnp.float32)
    w = jax.random.normal(kw, (COUT, CIN, 3, 3), jnp.float32) * 0.1
    b = jax.random.normal(kb, (COUT,), jnp.float32)
    return x, w, b
