import jax
