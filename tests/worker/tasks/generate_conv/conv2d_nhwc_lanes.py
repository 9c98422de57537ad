"""generate tests: a 2-D convolution of a channels-last image whose channels are not a multiple of
128 (XLA keeps it with W in the lanes) + per-channel bias + ReLU. The tests replace the sizes,
the padding, the strides, the layout (NHWC or PyTorch's NCHW) and the dtype lines."""
import jax
import jax.numpy as jnp

N, H, W, CIN, COUT, KH, KW = 2, 10, 256, 8, 16, 3, 3
PADDING = "SAME"
STRIDES = (1, 1)
LAYOUT = "NHWC"
DTYPE = jnp.float32
TOLERANCES = {"rtol": 1e-4, "atol": 1e-4}


def reference(x, w, b):
    spec = ("NHWC", "HWIO", "NHWC") if LAYOUT == "NHWC" else ("NCHW", "OIHW", "NCHW")
    y = jax.lax.conv_general_dilated(x, w, window_strides=STRIDES, padding=PADDING,
                                     dimension_numbers=spec)
    return jax.nn.relu(y + (b if LAYOUT == "NHWC" else b.reshape(1, -1, 1, 1)))


def make_inputs(key):
    kx, kw, kb = jax.random.split(key, 3)
    xs = (N, H, W, CIN) if LAYOUT == "NHWC" else (N, CIN, H, W)
    ws = (KH, KW, CIN, COUT) if LAYOUT == "NHWC" else (COUT, CIN, KH, KW)
    x = jax.random.normal(kx, xs, jnp.float32).astype(DTYPE)
    w = (jax.random.normal(kw, ws, jnp.float32) * 0.1).astype(DTYPE)
    b = jax.random.normal(kb, (COUT,), jnp.float32).astype(DTYPE)
    return x, w, b
