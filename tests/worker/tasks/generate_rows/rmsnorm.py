"""generate tests (rowwise): RMSNorm of (batch, seq, hidden) bf16 activations with a (1 + w)
weight, computed in float32, eps passed as a Python number (a static argument)."""
import jax
import jax.numpy as jnp

B, S, H = 2, 32, 256
TOLERANCES = {"rtol": 2e-2, "atol": 2e-2}


def reference(x, w, eps):
    xf = x.astype(jnp.float32)
    ms = jnp.mean(xf * xf, axis=-1, keepdims=True)
    y = xf * jax.lax.rsqrt(ms + eps) * (1.0 + w.astype(jnp.float32))
    return y.astype(x.dtype)


def make_inputs(key):
    kx, kw = jax.random.split(key)
    x = jax.random.normal(kx, (B, S, H), jnp.float32).astype(jnp.bfloat16)
    w = (0.1 * jax.random.normal(kw, (H,), jnp.float32)).astype(jnp.bfloat16)
    return x, w, 1e-6
