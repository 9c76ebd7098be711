"""Variant: the loop does not flush after `turn/end`.

Bug imitated: the agent loop appends `turn/end` and reports the turn done
(returns the answer, acknowledges the client) without its own flush,
leaving the closing event to ride along with the next turn's first
checkpoint, or the shutdown flush. A crash in between turns a completed
turn into an open one, which repair then closes as `interrupted`: a turn
the user saw complete is recorded as cut short (and under another repair
policy, re-run).

The oracle must report: COMPLETED_TURN_LOST (G4: the child went past
`turn/durable` of turn 0, and its `turn/end` is not in the crashed log).
Shows at: multi-turn.toml turn/started#2 or request/logged#2 (before the
second turn's request checkpoint). A single-turn scenario cannot show it:
the shutdown flush writes the last `turn/end`.
"""

from __future__ import annotations

from typing import Any

from _common import run

from faultlab.runtime.agent import Agent
from faultlab.runtime.persistence import PersistenceCoordinator


class _NoTurnEndFlush:
    """The agent's handle on the coordinator: its one flush (after turn/end) does nothing."""

    def __init__(self, coordinator: PersistenceCoordinator) -> None:
        self._coordinator = coordinator

    async def flush(self) -> None:
        return None  # the bug

    def __getattr__(self, name: str) -> Any:
        return getattr(self._coordinator, name)


_reference_init = Agent.__init__


def _init(self: Agent, *, coordinator: PersistenceCoordinator, **rest: Any) -> None:
    _reference_init(self, coordinator=_NoTurnEndFlush(coordinator), **rest)  # type: ignore[arg-type]


Agent.__init__ = _init  # type: ignore[method-assign]

if __name__ == "__main__":
    run()
