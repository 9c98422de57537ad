"""generate tests (rowwise refusal): a softmax over the FIRST axis (columns); the row template
must refuse it rather than normalise rows."""
import jax
import jax.numpy as jnp


def reference(x):
    return jax.nn.softmax(x, axis=0)


def make_inputs(key):
    return (jax.random.normal(key, (64, 256), jnp.float32),)
