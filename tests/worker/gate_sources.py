"""Legitimate Python files for the source gate's tests and bench (tests/worker/test_gate_terminates.py,
bench/gate): kernels' helper code full of rebindings, shadowing and alias loops, any length."""

import random

_IMPORTS = ("import functools\nimport math\nimport jax\nimport jax.numpy as jnp\nimport numpy as np\n"
            "from jax import lax\nfrom jax.experimental import pallas as pl\n"
            "from jax.experimental.pallas import tpu as pltpu\n")
_MEANINGS = ("jnp.float32", "jnp.bfloat16", "jnp.int32", "jnp.float16", "np.float32", "lax.dot_general",
             "pl.BlockSpec", "pltpu.VMEM", "functools.partial", "math.sqrt", "jax.jit", "jnp.dot",
             "pl.program_id", "jnp.zeros_like", "jax.ShapeDtypeStruct")


def legit_file(rng: random.Random, functions: int) -> str:
    """A module of `functions` defs that bind and rebind a few names to imported things within and
    across scopes, shadow module names, build alias loops (`a = b; b = a`), close over outer
    names, declare globals and nonlocals, and use what they bound."""
    names = ["dt", "acc", "spec", "mk", "f", "g", "op", "blk"]
    out = [_IMPORTS, "dt = jnp.float32\nacc = dt\n"]
    for i in range(functions):
        body = []
        picked = rng.sample(names, 3)
        for n in picked:
            body.append(f"{n} = {rng.choice(_MEANINGS)}")
        a, b = rng.sample(names, 2)
        body += [f"{a} = {b}", f"{b} = {a}"]  # a loop of aliases
        if rng.random() < 0.5:
            body.append(f"{picked[0]} = {picked[1]} if x else {rng.choice(_MEANINGS)}")
        declared_global = rng.random() < 0.3
        if declared_global:
            body.insert(0, "global acc")
            body.append(f"acc = {rng.choice(_MEANINGS)}")
        inner = [f"    def inner_{i}(y):"]
        if rng.random() < 0.5 and not (declared_global and picked[2] == "acc"):
            inner.append(f"        nonlocal {picked[2]}")
            inner.append(f"        {picked[2]} = {rng.choice(_MEANINGS)}")
        inner.append(f"        return y, {picked[0]}, {picked[2]}")
        body += [line[4:] for line in inner]
        body.append(f"return inner_{i}(x), {', '.join(picked)}")
        out.append(f"def fn_{i}(x):\n" + "".join(f"    {line}\n" for line in body))
        if i % 7 == 0:
            out.append(f"class Holder{i}:\n    dt = jnp.bfloat16\n    def get(self):\n"
                       f"        self.cached = dt\n        return self.cached\n")
    return "\n".join(out)
