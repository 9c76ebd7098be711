# Reading an app's store with the app's own loader: for frameworks whose
# history store belongs to the app (pydantic-ai's `load_history`), the lab
# cannot know the store's format, so a child of the case (the framework's
# child module, action `read`) runs the app's loader on a scratch copy of
# the store and writes what it found as the lab's History.  A loader that
# raises, or a reader that dies, is `StoreUnreadable`: the case's verdict
# is STORE_UNREADABLE, never an empty history (issue 32: a store in the
# app's own format read as empty gave 36 false TOOL_INTENT_LOST).
from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import orjson

from faultlab.lab.apps.adkstate import read_database_session
from faultlab.lab.apps.lgstate import PersistedThread
from faultlab.lab.read.histories import History
from faultlab.userfiles import copy_target, read_target


class _Rig(Protocol):
    """What a reading needs of the case's rig (faultlab/lab/apps/drive.py
    `AppRig`, which imports this module)."""

    where: Path
    db: Path

    def start(self, action: str, *, turn: int = 0, fail: str | None = None,
              extra: Sequence[str] = ()) -> Any: ...  # fmt: skip

    def finish(self, run: Any, *, armed: bool = False) -> tuple[int | None, bool, str | None]: ...

    def tail(self, name: str, limit: int = 4000) -> str: ...

__all__ = ["READ_BY_APP", "STORE_SUFFIXES", "StoreUnreadable", "read_adk_database", "read_by_app"]

# The frameworks whose store the lab reads through the app's loader.
READ_BY_APP = ("pydantic-ai", "openai-agents", "google-adk")
# A store is the file at its path and, for SQLite, its journal files.
STORE_SUFFIXES = ("", "-wal", "-shm", "-journal")
# A reading is the lab's JSON of a History: a store this large is refused.
_READING_LIMIT = 64 * 1024 * 1024


class StoreUnreadable(Exception):
    """The app's own loader could not read the store it left: `reason` says
    what it raised (or how the reader ended)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def read_by_app(rig: _Rig, name: str) -> PersistedThread:
    """The history the app's loader finds in the copy of its store the rig
    kept as `name` (`at-kill`, `final`).  The loader runs on a scratch copy
    of that copy: opening a SQLite store may checkpoint its WAL, and the
    kept copy stays the raw evidence."""
    out = rig.where / f"{name}.reading.json"
    store = _scratch_copy(rig, name)
    try:
        run = rig.start("read", extra=("--db", str(store), "--out", str(out)))
        status, _killed, hung = rig.finish(run)
        raw = read_target(out, what="store reading", limit=_READING_LIMIT)
    finally:
        shutil.rmtree(store.parent, ignore_errors=True)
    if raw is None:
        why = hung or f"it exited {status}"
        tail = rig.tail(f"{run.name}.stderr", 1500).strip()
        raise StoreUnreadable(f"the app's load_history did not return ({why})"
                              + (f": {tail.splitlines()[-1]}" if tail else ""))  # fmt: skip
    reading = orjson.loads(raw)
    if "error" in reading:
        raise StoreUnreadable(f"the app's load_history raised {reading['error']}")
    history = History.from_json(reading["history"])
    return PersistedThread(history, (), ((int(reading["count"]), rig.db.name),), (), History(()))


def _scratch_copy(rig: _Rig, name: str) -> Path:
    """A scratch copy of the rig's kept copy `name` of its store (with its
    journal files): a reader's SQLite may write beside it, and the kept
    copy stays the raw evidence."""
    scratch = rig.where / f"{name}.read"
    scratch.mkdir(exist_ok=True)
    for suffix in STORE_SUFFIXES:
        copy_target(rig.where / f"{name}{rig.db.suffix}{suffix}",
                    scratch / f"{rig.db.name}{suffix}", what="app store")  # fmt: skip
    return scratch / rig.db.name


def read_adk_database(rig: _Rig, name: str, *, user_id: str,
                      session_id: str) -> PersistedThread | None:  # fmt: skip
    """The session as ADK's DatabaseSessionService stored it in the copy
    `name` of the case's SQLite database, read by the lab (no child, no
    ADK); None when the store is not that service's (the app's own
    service then reads it: `read_by_app`).  A database or event that cannot
    be read is `StoreUnreadable`."""
    store = _scratch_copy(rig, name)
    try:
        stored = read_database_session(store, user_id=user_id, session_id=session_id,
                                       limit=_READING_LIMIT)  # fmt: skip
    except (sqlite3.Error, ValueError) as error:
        raise StoreUnreadable(f"the ADK session database: {error}") from None
    finally:
        shutil.rmtree(store.parent, ignore_errors=True)
    if stored is None:
        return None
    return PersistedThread(stored.history, (), ((stored.count, rig.db.name),), (), History(()))
