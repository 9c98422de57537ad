"""GeGLU MLP with weights stored (out, in) as torch.nn.Linear keeps them: x @ W.T everywhere."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "geglu_mlp_torch_layout", "batch": 4, "seq": 1024, "d_model": 2048,
          "d_ff": 8192}


def create_inputs(dtype=jnp.float32):
    kx, kg, ku, kd = jax.random.split(jax.random.key(302), 4)
    d, f = CONFIG["d_model"], CONFIG["d_ff"]
    x = jax.random.normal(kx, (CONFIG["batch"], CONFIG["seq"], d), dtype=dtype)
    gate_proj = jax.random.normal(kg, (f, d), dtype=dtype) * d ** -0.5
    up_proj = jax.random.normal(ku, (f, d), dtype=dtype) * d ** -0.5
    down_proj = jax.random.normal(kd, (d, f), dtype=dtype) * f ** -0.5
    return x, gate_proj, up_proj, down_proj


def workload(x, gate_proj, up_proj, down_proj):
    gate = jax.nn.gelu(jnp.einsum("bsd,fd->bsf", x, gate_proj), approximate=True)
    up = jnp.einsum("bsd,fd->bsf", x, up_proj)
    return jnp.einsum("bsf,df->bsd", gate * up, down_proj)
