"""A pointwise (1x1) convolution on an NHWC feature map as a matmul over channels, then
InstanceNorm (statistics over H and W per image and channel), affine, ReLU."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "pointwise_instancenorm_nhwc_relu", "batch": 8, "height": 64, "width": 64,
          "c_in": 1024, "c_out": 1024, "eps": 1e-5}


def create_inputs(dtype=jnp.float32):
    ks = jax.random.split(jax.random.key(374), 4)
    n, h, w_, ci, co = (CONFIG[k] for k in ("batch", "height", "width", "c_in", "c_out"))
    x = jax.random.normal(ks[0], (n, h, w_, ci), dtype=dtype)
    w = jax.random.normal(ks[1], (ci, co), dtype=dtype) * ci ** -0.5
    gamma = jax.random.uniform(ks[2], (co,), dtype=dtype, minval=0.5, maxval=1.5)
    beta = jax.random.normal(ks[3], (co,), dtype=dtype) * 0.1
    return x, w, gamma, beta


def workload(x, w, gamma, beta):
    y = x @ w
    mean = jnp.mean(y, axis=(1, 2), keepdims=True)
    var = jnp.var(y, axis=(1, 2), keepdims=True)
    return jax.nn.relu(gamma * (y - mean) / jnp.sqrt(var + CONFIG["eps"]) + beta)


def get_flops():
    n, h, w_, ci, co = (CONFIG[k] for k in ("batch", "height", "width", "c_in", "c_out"))
    return 2 * n * h * w_ * ci * co
