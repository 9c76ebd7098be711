# Persistence backends behind one small protocol (open, append_batch, sync,
# load, arm_failure, close): which backends exist, building one by name, and
# listing the sessions kept under a directory.
from __future__ import annotations

import os
from pathlib import Path

from faultlab.runtime.backends.base import (
    Backend,
    LoadedLog,
    SessionCorruptError,
    SessionExistsError,
    SessionLockedError,
    SessionMissingError,
    SessionStoreError,
    SessionSummary,
)
from faultlab.runtime.backends.jsonl import LOG_NAME, JsonlBackend

__all__ = [
    "BACKENDS",
    "Backend",
    "JsonlBackend",
    "LoadedLog",
    "SessionCorruptError",
    "SessionExistsError",
    "SessionLockedError",
    "SessionMissingError",
    "SessionStoreError",
    "SessionSummary",
    "list_sessions",
    "open_backend",
]

BACKENDS = ("jsonl", "sqlite")
# The file that marks a directory as holding a session of each backend.
_MARKERS = {"jsonl": LOG_NAME, "sqlite": "session.sqlite"}


def _check_kind(kind: str) -> None:
    if kind not in BACKENDS:
        raise ValueError(f"unknown backend {kind!r} (known: {', '.join(BACKENDS)})")


def open_backend(kind: str, directory: str | os.PathLike[str]) -> Backend:
    """Build the backend named `kind` for the session stored in `directory`.

    A directory that already holds another backend's session is refused: a
    resume with the wrong backend would otherwise start an empty session."""
    _check_kind(kind)
    for other, marker in _MARKERS.items():
        if other != kind and (Path(directory) / marker).exists():
            raise SessionExistsError(
                f"{Path(directory) / marker}: this directory holds a {other} session; "
                f"open it with backend {other!r}, not {kind!r}"
            )
    if kind == "sqlite":
        from faultlab.runtime.backends.sqlite import SqliteBackend  # sqlite3 only when used

        return SqliteBackend(directory)
    return JsonlBackend(directory)


def list_sessions(kind: str, root: str | os.PathLike[str]) -> tuple[SessionSummary, ...]:
    """The `kind` sessions kept in the sub-directories of `root`, sorted by directory
    (without taking any lock: a live session is listed as committed so far)."""
    _check_kind(kind)
    if kind == "sqlite":
        from faultlab.runtime.backends.sqlite import SqliteBackend

        summarize = SqliteBackend.summarize
    else:
        summarize = JsonlBackend.summarize
    base = Path(root)
    if not base.is_dir():
        raise SessionMissingError(f"{base}: no such directory of sessions")
    found = (summarize(child) for child in sorted(base.iterdir()) if child.is_dir())
    return tuple(summary for summary in found if summary is not None)
