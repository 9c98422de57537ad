"""generate tests: JAXBench form, bf16 linear layer against a (out, in) weight + bias + sigmoid
gate (matmul_epilogue, 16-row bf16 tiles)."""
import jax
import jax.numpy as jnp

CONFIG = {"batch": 256, "in_features": 256, "out_features": 384, "dtype": jnp.bfloat16}
TOLERANCES = {"rtol": 2e-2, "atol": 2e-2}


def create_inputs(dtype=CONFIG["dtype"]):
    k1, k2, k3 = jax.random.split(jax.random.key(7), 3)
    x = jax.random.normal(k1, (CONFIG["batch"], CONFIG["in_features"]), dtype)
    w = (jax.random.normal(k2, (CONFIG["out_features"], CONFIG["in_features"]), jnp.float32)
         * 0.05).astype(dtype)
    bias = jax.random.normal(k3, (CONFIG["out_features"],), dtype)
    return x, w, bias


def workload(x, w, bias):
    y = x @ w.T + bias
    return y * jax.nn.sigmoid(y)


def get_flops():
    return 2 * CONFIG["batch"] * CONFIG["in_features"] * CONFIG["out_features"]
