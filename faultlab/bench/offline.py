# Issue 5's figure as a benchmark section: offline power-loss/torn-write crash
# states checked per second vs real SIGKILL cases per second.  The lab measures
# it (`faultlab.lab.faults.powerloss.offline_rate`); this only wraps it.
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from faultlab.bench.common import Say, quiet

__all__ = ["OfflineStates", "offline_states"]


@dataclass(frozen=True)
class OfflineStates:
    """Offline power-loss/torn-write crash states checked per second vs real
    SIGKILL cases per second, measured in the same run (issue 5)."""

    figures: dict[str, Any]


def offline_states(quick: bool, *, say: Say = quiet) -> OfflineStates:
    from faultlab.lab.faults.powerloss import offline_rate

    say("offline states: deriving and checking every power-loss and torn-write state")
    return OfflineStates(offline_rate(quick))
