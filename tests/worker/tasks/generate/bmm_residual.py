"""generate tests: batched matmul against transposed weights (einsum), scaled, plus a residual,
relu, clamped (matmul_epilogue, batch grid axis)."""
import jax
import jax.numpy as jnp

B, S, K, N = 2, 128, 256, 256
TOLERANCES = {"rtol": 1e-4, "atol": 1e-4}


def reference(q, kv, r):
    y = jnp.einsum("bsk,bnk->bsn", q, kv) * 0.125 + r
    return jnp.clip(jax.nn.relu(y), 0.0, 4.0)


def make_inputs(key):
    kq, kk, kr = jax.random.split(key, 3)
    return (jax.random.normal(kq, (B, S, K), jnp.float32),
            jax.random.normal(kk, (B, N, K), jnp.float32),
            jax.random.normal(kr, (B, S, N), jnp.float32))
