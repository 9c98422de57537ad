# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.float32):
    batch, c_in, c_out, size, k = 2, 16, 32, 1024, 5
    kx, kw = jax.random.split(jax.random.key(407))
    x = jax.random.normal(kx, (batch, c_in, size, size), dtype=dtype)
    w = jax.random.normal(kw, (c_out, c_in, k, k), dtype=dtype) * (k * k * c_in) ** -0.5
    scale = 0.5
    dynamic_args = [x, w]
    static_args = [scale]
    return dynamic_args, static_args


# Computation
def computation(x, w, scale):
    y = jax.lax.conv_general_dilated(x, w, (1, 1), "VALID",
                                     dimension_numbers=("NCHW", "OIHW", "NCHW"))
    return jnp.clip(y * scale, -1.0, 1.0)
