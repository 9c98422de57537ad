"""generate tests: a 2-D transposed convolution + per-channel bias + ReLU (conv_transpose2d).
PyTorch's spelling (NCHW, weight (Cin, Cout, kh, kw), the kernel flipped, padding K - 1 - P with
the output padding on the high side) or lax.conv_transpose's (NHWC, HWIO). The tests replace the
sizes, layout, stride, padding and dtype lines."""
import jax
import jax.numpy as jnp

N, CIN, H, W, COUT, K = 2, 8, 9, 7, 16, 4
LAYOUT = "NCHW"
STRIDE, PAD, OUT_PAD = 2, 1, 0
DTYPE = jnp.float32
TOLERANCES = {"rtol": 1e-4, "atol": 1e-4}


def reference(x, w, b):
    if LAYOUT == "NCHW":
        lo, hi = K - 1 - PAD, K - 1 - PAD + OUT_PAD
        w_oihw = jnp.flip(w, (2, 3)).transpose(1, 0, 2, 3)
        y = jax.lax.conv_general_dilated(x, w_oihw, (1, 1), ((lo, hi), (lo, hi)),
                                         lhs_dilation=(STRIDE, STRIDE),
                                         dimension_numbers=("NCHW", "OIHW", "NCHW"))
        return jax.nn.relu(y + b[:, None, None])
    y = jax.lax.conv_transpose(x, w, (STRIDE, STRIDE), "SAME",
                               dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return jax.nn.relu(y + b)


def make_inputs(key):
    kx, kw, kb = jax.random.split(key, 3)
    xs = (N, CIN, H, W) if LAYOUT == "NCHW" else (N, H, W, CIN)
    ws = (CIN, COUT, K, K) if LAYOUT == "NCHW" else (K, K, CIN, COUT)
    x = jax.random.normal(kx, xs, DTYPE)
    w = (jax.random.normal(kw, ws, jnp.float32) * (K * K * CIN) ** -0.5).astype(DTYPE)
    b = jax.random.normal(kb, (COUT,), DTYPE)
    return x, w, b
