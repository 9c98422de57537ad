# generate tests (rowwise): MaxKernel's published layout, LayerNorm with weight and bias; the
# mean and variance divide by the row length (the kernel must not bake 512 in).
import jax
import jax.numpy as jnp


def get_inputs(dtype=jnp.float32):
    rows, hidden = 64, 512
    kx, kw, kb = jax.random.split(jax.random.key(3), 3)
    x = 3.0 + 2.0 * jax.random.normal(kx, (rows, hidden), dtype=dtype)
    w = 1.0 + 0.1 * jax.random.normal(kw, (hidden,), dtype=dtype)
    b = 0.1 * jax.random.normal(kb, (hidden,), dtype=dtype)
    dynamic_args = [x, w, b]
    static_args = [1e-5]
    return dynamic_args, static_args


def computation(x, weight, bias, eps):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.var(x, axis=-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + eps) * weight + bias
