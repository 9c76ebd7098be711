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
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import orjson

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

__all__ = ["READ_BY_APP", "STORE_SUFFIXES", "StoreUnreadable", "read_by_app"]

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
    scratch = rig.where / f"{name}.read"
    scratch.mkdir(exist_ok=True)
    store = scratch / rig.db.name
    out = rig.where / f"{name}.reading.json"
    try:
        for suffix in STORE_SUFFIXES:
            copy_target(rig.where / f"{name}{rig.db.suffix}{suffix}",
                        scratch / f"{rig.db.name}{suffix}", what="app store")  # fmt: skip
        run = rig.start("read", extra=("--db", str(store), "--out", str(out)))
        status, _killed, hung = rig.finish(run)
        raw = read_target(out, what="store reading", limit=_READING_LIMIT)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
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
