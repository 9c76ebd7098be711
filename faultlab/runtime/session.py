# The in-memory session log: an append-only list of events.  It assigns seqs
# (contiguous from 0) synchronously and never re-enters: durability belongs to
# the persistence coordinator, not to the log.
from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

from faultlab.runtime.events import Event

__all__ = ["ReentrantAppendError", "SessionLog"]


class ReentrantAppendError(RuntimeError):
    """`append` was called while another append was still running."""


class SessionLog:
    """Append-only event list with contiguous seqs."""

    def __init__(self, session_id: str, events: Iterable[Event] = ()) -> None:
        self.session_id = session_id
        self._events: list[Event] = []
        self._appending = False
        for event in events:
            if event.seq != len(self._events):
                raise ValueError(f"seq {event.seq} where {len(self._events)} was expected")
            self._events.append(event)

    def append(self, type_: str, data: dict[str, Any]) -> Event:
        """Add one event and return it; its seq is the next integer."""
        if self._appending:
            raise ReentrantAppendError("SessionLog.append re-entered")
        self._appending = True
        try:
            event = Event(len(self._events), type_, time.time(), data)
            self._events.append(event)
            return event
        finally:
            self._appending = False

    @property
    def next_seq(self) -> int:
        return len(self._events)

    @property
    def events(self) -> Sequence[Event]:
        return self._events

    def since(self, seq: int) -> list[Event]:
        return self._events[seq:]

    def __len__(self) -> int:
        return len(self._events)
