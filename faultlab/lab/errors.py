# The lab's error for a caller's mistake (bad option, unknown name): the CLI
# turns it into one line and exit 2.  Anything else escaping the lab is a bug.
from __future__ import annotations

__all__ = ["LabUsageError"]


class LabUsageError(ValueError):
    """An argument given to the lab is invalid; the message says which and why."""
