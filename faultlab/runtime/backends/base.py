# The backend protocol, what a load returns, and the errors a session store
# raises.  Backends own bytes on disk; the coordinator owns when to flush.
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from faultlab.runtime.events import Event

__all__ = [
    "Backend",
    "LoadedLog",
    "SessionCorruptError",
    "SessionExistsError",
    "SessionLockedError",
    "SessionMissingError",
    "SessionStoreError",
    "SessionSummary",
]


class SessionStoreError(Exception):
    """Base class of the errors a session store reports to its user."""


class SessionCorruptError(SessionStoreError):
    """A committed part of the log cannot be read."""

    def __init__(
        self, path: str, line: int, offset: int, problem: str, *, where: str | None = None
    ) -> None:
        self.path = path
        self.line = line
        self.offset = offset
        self.problem = problem
        self.where = where  # a database's place ("row seq 7"), where bytes mean nothing
        if where is not None:
            super().__init__(f"{path}: corrupt session database at {where}: {problem}")
        else:
            super().__init__(f"{path}:{line}: corrupt session log at byte {offset}: {problem}")


class SessionLockedError(SessionStoreError):
    """Another live writer holds the session."""


class SessionMissingError(SessionStoreError):
    """There is no session to open."""


class SessionExistsError(SessionStoreError):
    """A new session was requested where one already exists."""


@dataclass(frozen=True, slots=True)
class LoadedLog:
    """A session log as read back: header, events, and what was cut off."""

    header: dict[str, Any]
    events: tuple[Event, ...]
    valid_size: int
    cut_bytes: int = 0
    notes: tuple[str, ...] = field(default=())

    @property
    def session_id(self) -> str:
        return str(self.header.get("id", ""))


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """One stored session as a listing shows it (``problem`` set: unreadable)."""

    directory: str
    location: str
    session_id: str | None
    created_at: float | None
    events: int | None
    problem: str | None = None


class Backend(Protocol):
    """Durable storage of one session's events."""

    @property
    def location(self) -> str: ...

    def open(self, *, session_id: str | None, create: bool, resume: bool) -> LoadedLog:
        """Take the writer lock and load (or create) the session."""
        ...

    def append_batch(self, events: Sequence[Event]) -> None:
        """Write `events` (contiguous, starting at the stored next seq)."""
        ...

    def sync(self) -> None:
        """Make everything written so far durable; on failure undo unsynced writes."""
        ...

    def load(self) -> LoadedLog:
        """Read the stored session without taking the lock."""
        ...

    def arm_failure(self, op: str, errno_: int) -> None:
        """Make the next `op` ("write" or "sync") fail with `errno_` (fault injection)."""
        ...

    def close(self) -> None: ...
