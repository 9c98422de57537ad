"""Cheat for the JAXBench task in tests/worker/tasks/jaxbench: imports the task's own baseline
module to reuse its reference (the worker's task module is not where the golden outputs are, but
a candidate has no business reading the task)."""
import baseline  # cheat
import jax
from jax.experimental import pallas as pl


def _copy(c_ref, o_ref):
    o_ref[...] = c_ref[...]


def workload(x, w):
    c = baseline.workload(x, w)
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(c.shape, c.dtype))(c)
