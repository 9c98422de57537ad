"""Where the ops write files: the worker's private temp dir (set by the protocol layer when it
starts), one fresh numbered folder per use."""

from __future__ import annotations

import itertools
import os

WORKDIR = {"path": None}  # set by the protocol layer (the private temp dir)
_counter = itertools.count()


def numbered_dir(template: str) -> str:
    """A path under the work dir (the current one before it is set): `template` with {n}
    replaced by a number no earlier call of this process got."""
    return os.path.join(WORKDIR["path"] or os.getcwd(), template.format(n=next(_counter)))
