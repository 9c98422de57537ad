"""generate tests: linear + bias, InstanceNorm (statistics over each instance's sequence or
spatial axes, per channel; affine), then SiLU (matmul_batch_norm, one set of statistics per
instance). The sizes lines are replaced by the tests: SPATIAL = (H, W) makes x (B, H, W, K)
with statistics over (H, W); None makes x (B, L, K) with statistics over L."""
import jax
import jax.numpy as jnp

B, L, K, C = 4, 64, 256, 256
SPATIAL = None
DTYPE = jnp.float32
TOLERANCES = {"rtol": 1e-4, "atol": 1e-4}


def reference(x, w, b, gamma, beta):
    y = jnp.dot(x, w, preferred_element_type=jnp.float32) + b
    axes = tuple(range(1, y.ndim - 1))
    mean = jnp.mean(y, axis=axes, keepdims=True)
    var = jnp.var(y, axis=axes, keepdims=True)
    return jax.nn.silu((y - mean) * jax.lax.rsqrt(var + 1e-5) * gamma + beta).astype(x.dtype)


def make_inputs(key):
    kx, kw, kb, kg, kt = jax.random.split(key, 5)
    rows = (L,) if SPATIAL is None else tuple(SPATIAL)
    x = (jax.random.normal(kx, (B,) + rows + (K,), jnp.float32) + 0.5).astype(DTYPE)
    w = (jax.random.normal(kw, (K, C), jnp.float32) * 0.05).astype(DTYPE)
    b = jax.random.normal(kb, (C,), jnp.float32)
    gamma = 1.0 + 0.1 * jax.random.normal(kg, (C,), jnp.float32)
    beta = 0.1 * jax.random.normal(kt, (C,), jnp.float32)
    return x, w, b, gamma, beta
