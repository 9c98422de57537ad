"""2x2 average pooling (stride 2, no padding) of a channels-last feature map with
lax.reduce_window, the sum divided by the window size."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "avgpool2x2_nhwc", "batch": 2, "height": 1024, "width": 1024, "channels": 64,
          "window": 2}


def create_inputs(dtype=jnp.float32):
    shape = (CONFIG["batch"], CONFIG["height"], CONFIG["width"], CONFIG["channels"])
    return (jax.random.normal(jax.random.key(376), shape, dtype=dtype),)


def workload(x):
    k = CONFIG["window"]
    summed = jax.lax.reduce_window(x, 0.0, jax.lax.add, (1, k, k, 1), (1, k, k, 1), "VALID")
    return summed / (k * k)


def get_flops():
    return CONFIG["batch"] * CONFIG["height"] * CONFIG["width"] * CONFIG["channels"]
