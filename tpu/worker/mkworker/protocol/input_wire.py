"""One input set as data (issue 36): the reference's child describes how its arrays sit in the
call (positions, keywords, containers, static values), the judge passes that description and the
arrays on to the candidate's child, which rebuilds the same call without drawing the inputs again
(drawing them means compiling the task's input function in every fresh child).

The description is plain JSON: {"a": i} the i-th array of the set, {"s": v} a static scalar
(int, float, bool, str, None), {"t": [...]} a tuple, {"l": [...]} a list, {"d": [[key, node]...]}
a dict with string keys. A set that holds anything else is not described (None): the candidate's
child then draws its inputs itself, as before."""

from __future__ import annotations

_SCALARS = (bool, int, float, str, type(None))
_MAX_NODES = 10000


def describe(full_args, full_kwargs, leaves) -> dict | None:
    """The description of a call's arguments whose arrays are `leaves` (by identity), or None."""
    index = {id(x): i for i, x in enumerate(leaves)}
    seen: set[int] = set()
    budget = [_MAX_NODES]

    def node(x):
        budget[0] -= 1
        if budget[0] < 0:
            raise _Undescribable
        if id(x) in index and not isinstance(x, _SCALARS):
            seen.add(index[id(x)])
            return {"a": index[id(x)]}
        if type(x) in _SCALARS:
            return {"s": x}
        if type(x) is tuple:
            return {"t": [node(v) for v in x]}
        if type(x) is list:
            return {"l": [node(v) for v in x]}
        if type(x) is dict and all(isinstance(k, str) for k in x):
            return {"d": [[k, node(v)] for k, v in x.items()]}
        raise _Undescribable

    try:
        desc = {"args": [node(a) for a in full_args], "kwargs": [[k, node(v)] for k, v in full_kwargs.items()]}
    except (_Undescribable, RecursionError):  # nested past Python's stack: the child draws its own
        return None
    return desc if len(seen) == len(leaves) else None


def rebuild(desc, arrays) -> tuple[tuple, dict]:
    """(args, kwargs) from a description and its arrays; ValueError when they do not fit."""
    used: set[int] = set()

    def node(n):
        if not isinstance(n, dict) or len(n) != 1:
            raise ValueError("malformed input description")
        (kind, v), = n.items()
        if kind == "a":
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < len(arrays) or v in used:
                raise ValueError("an input description names an array it does not have")
            used.add(v)
            return arrays[v]
        if kind == "s" and type(v) in _SCALARS:
            return v
        if kind in ("t", "l") and isinstance(v, list):
            items = [node(x) for x in v]
            return tuple(items) if kind == "t" else items
        if kind == "d" and isinstance(v, list):
            return {_key(kv): node(kv[1]) for kv in v}
        raise ValueError("malformed input description")

    if not isinstance(desc, dict) or not isinstance(desc.get("args"), list) or \
            not isinstance(desc.get("kwargs"), list):
        raise ValueError("malformed input description")  # noqa: TRY004 - one error for every bad shape
    args = tuple(node(n) for n in desc["args"])
    kwargs = {_key(kv): node(kv[1]) for kv in desc["kwargs"]}
    if len(used) != len(arrays):
        raise ValueError("an input description leaves arrays out")
    return args, kwargs


def _key(kv):
    if not isinstance(kv, list) or len(kv) != 2 or not isinstance(kv[0], str):
        raise ValueError("malformed input description")
    return kv[0]


class _Undescribable(Exception):
    pass
