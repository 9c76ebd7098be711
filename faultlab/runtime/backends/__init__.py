# Persistence backends behind one small protocol (append_batch, sync, load).
from __future__ import annotations

from faultlab.runtime.backends.base import (
    Backend,
    LoadedLog,
    SessionCorruptError,
    SessionExistsError,
    SessionLockedError,
    SessionMissingError,
    SessionStoreError,
)
from faultlab.runtime.backends.jsonl import JsonlBackend

__all__ = [
    "Backend",
    "JsonlBackend",
    "LoadedLog",
    "SessionCorruptError",
    "SessionExistsError",
    "SessionLockedError",
    "SessionMissingError",
    "SessionStoreError",
    "open_backend",
]


def open_backend(kind: str, directory: str) -> Backend:
    """Build the backend named `kind` for the session stored in `directory`."""
    if kind == "jsonl":
        return JsonlBackend(directory)
    raise ValueError(f"unknown backend {kind!r} (known: jsonl)")
