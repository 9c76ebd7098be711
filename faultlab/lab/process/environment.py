# The environment a target runs with: the few variables it may need to find
# Python and its packages, and nothing else of the lab's.  Exec'd children
# get it with their probe's variables; the fork servers are started with it,
# so a forked child inherits the same and changes only what differs.
from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["trimmed_environment"]

_KEEP = ("PATH", "HOME", "LANG", "LC_ALL", "PYTHONPATH", "VIRTUAL_ENV", "TMPDIR", "SYSTEMROOT")


def trimmed_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The lab's values of the kept variables, no bytecode writing, and `extra`."""
    env = {key: os.environ[key] for key in _KEEP if key in os.environ}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra or {})
    return env
