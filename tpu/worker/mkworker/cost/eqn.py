"""Running a jaxpr one equation at a time (cost.profile's named scopes, tasks.shrink's smaller
sizes): binding an equation's primitive as it is or with changed params, and keeping its results."""

from __future__ import annotations


def bind(eqn, invals, params=None):
    """The equation's primitive applied to `invals`, with `params` in place of its own if given."""
    bind_params = eqn.primitive.get_bind_params(eqn.params if params is None else params)
    if isinstance(bind_params, tuple):  # older JAX: (subfuns, params)
        subfuns, bind_params = bind_params
        return eqn.primitive.bind(*subfuns, *invals, **bind_params)
    return eqn.primitive.bind(*invals, **bind_params)


def store_results(env: dict, eqn, outs) -> None:
    """Binds the equation's output variables in `env` (one result unless the primitive has
    several; dropped outputs are skipped)."""
    if not eqn.primitive.multiple_results:
        outs = [outs]
    for v, o in zip(eqn.outvars, outs):
        if type(v).__name__ != "DropVar":
            env[v] = o
