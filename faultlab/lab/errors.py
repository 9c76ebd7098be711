# The lab's error for a caller's mistake (bad option, unknown name): the CLI
# turns it into one line and exit 2.  Anything else escaping the lab is a bug.
# Also the one check of each number every entry point takes (`jobs`, the
# timeout), so the library, the CLI, the pytest plugin, the strategies and the
# zoo refuse the same values with the same message.
from __future__ import annotations

import math

__all__ = ["MAX_TIMEOUT", "MIN_TIMEOUT", "LabUsageError", "check_jobs", "check_timeout"]

# Seconds: a tenth of a second is the least a child is given to reach its kill
# point (less only ever times out); a day the most (docs/cli.md, "Limits").
MIN_TIMEOUT = 0.1
MAX_TIMEOUT = 86_400.0


class LabUsageError(ValueError):
    """An argument given to the lab is invalid; the message says which and why."""


def check_jobs(jobs: object) -> int:
    """`jobs` (cases at a time): a whole number, at least 1."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise LabUsageError(f"jobs must be at least 1, not {jobs!r}")
    return jobs


def check_timeout(timeout: object) -> float:
    """A timeout (the budget of each wait on a child): a finite number of
    seconds from MIN_TIMEOUT to MAX_TIMEOUT."""
    if isinstance(timeout, int | float) and not isinstance(timeout, bool) \
            and math.isfinite(timeout) and MIN_TIMEOUT <= timeout <= MAX_TIMEOUT:  # fmt: skip
        return float(timeout)
    raise LabUsageError(f"timeout must be a number of seconds from {MIN_TIMEOUT:g} to "
                        f"{MAX_TIMEOUT:g}, not {timeout!r}")  # fmt: skip
