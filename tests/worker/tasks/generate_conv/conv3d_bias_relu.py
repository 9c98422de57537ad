"""generate tests: a 3-D convolution (3x3x3 window, padding 1) + per-channel bias + ReLU
(conv3d). The tests replace the sizes, layout (NDHWC or PyTorch's NCDHW), stride and dtype
lines."""
import jax
import jax.numpy as jnp

N, CIN, D, H, W, COUT = 1, 4, 8, 8, 8, 8
LAYOUT = "NDHWC"
STRIDE = 1
DTYPE = jnp.float32
TOLERANCES = {"rtol": 1e-4, "atol": 1e-4}


def reference(x, w, b):
    spec = ("NDHWC", "DHWIO", "NDHWC") if LAYOUT == "NDHWC" else ("NCDHW", "OIDHW", "NCDHW")
    y = jax.lax.conv_general_dilated(x, w, window_strides=(STRIDE,) * 3,
                                     padding=((1, 1), (1, 1), (1, 1)), dimension_numbers=spec)
    return jax.nn.relu(y + (b if LAYOUT == "NDHWC" else b.reshape(1, -1, 1, 1, 1)))


def make_inputs(key):
    kx, kw, kb = jax.random.split(key, 3)
    xs = (N, D, H, W, CIN) if LAYOUT == "NDHWC" else (N, CIN, D, H, W)
    ws = (3, 3, 3, CIN, COUT) if LAYOUT == "NDHWC" else (COUT, CIN, 3, 3, 3)
    x = jax.random.normal(kx, xs, jnp.float32).astype(DTYPE)
    w = (jax.random.normal(kw, ws, jnp.float32) * (27 * CIN) ** -0.5).astype(DTYPE)
    b = jax.random.normal(kb, (COUT,), jnp.float32).astype(DTYPE)
    return x, w, b
