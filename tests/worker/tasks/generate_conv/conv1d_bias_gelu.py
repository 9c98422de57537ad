"""generate tests: a 1-D convolution + per-channel bias + GELU (conv1d). The tests replace the
sizes, layout (NWC or PyTorch's NCW), stride and dtype lines."""
import jax
import jax.numpy as jnp

N, CIN, L, COUT, K = 2, 8, 64, 16, 5
LAYOUT = "NWC"
STRIDE = 1
DTYPE = jnp.float32
TOLERANCES = {"rtol": 1e-4, "atol": 1e-4}


def reference(x, w, b):
    spec = ("NWC", "WIO", "NWC") if LAYOUT == "NWC" else ("NCW", "OIW", "NCW")
    y = jax.lax.conv_general_dilated(x, w, window_strides=(STRIDE,), padding="SAME",
                                     dimension_numbers=spec)
    return jax.nn.gelu(y + (b if LAYOUT == "NWC" else b[:, None]))


def make_inputs(key):
    kx, kw, kb = jax.random.split(key, 3)
    xs = (N, L, CIN) if LAYOUT == "NWC" else (N, CIN, L)
    ws = (K, CIN, COUT) if LAYOUT == "NWC" else (COUT, CIN, K)
    x = jax.random.normal(kx, xs, DTYPE)
    w = (jax.random.normal(kw, ws, jnp.float32) * (K * CIN) ** -0.5).astype(DTYPE)
    b = jax.random.normal(kb, (COUT,), DTYPE)
    return x, w, b
