# The SQLite session store's format: its schema (version 1, documented in
# docs/backends.md), how the connection is set up (WAL, synchronous=FULL, no
# implicit transactions), and the reader that turns a database into events,
# reporting any damage by row (a committed row is never a torn tail).
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson

from faultlab.runtime.backends.base import LoadedLog, SessionCorruptError
from faultlab.runtime.events import EVENT_TYPES, FORMAT_VERSION, Event

__all__ = ["SCHEMA", "connect", "decode_header", "read_database"]

SCHEMA = (
    "CREATE TABLE header ("
    " only INTEGER PRIMARY KEY CHECK (only = 1),"
    " format INTEGER NOT NULL,"
    " id TEXT NOT NULL,"
    " created_at REAL NOT NULL"
    ") STRICT",
    "CREATE TABLE events ("
    " seq INTEGER PRIMARY KEY CHECK (seq >= 0),"
    " type TEXT NOT NULL,"
    " time REAL NOT NULL,"
    " data TEXT NOT NULL"
    ") STRICT",
)


def connect(path: Path) -> sqlite3.Connection:
    """A writer's connection: WAL (refused otherwise), synchronous=FULL, and
    isolation_level=None (no implicit transactions: every BEGIN/COMMIT is ours)."""
    connection = sqlite3.connect(path, isolation_level=None, timeout=0.0)
    try:
        mode = connection.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise sqlite3.OperationalError(f"journal_mode is {mode!r}, WAL was refused")
        connection.execute("PRAGMA synchronous=FULL")
    except BaseException:
        connection.close()
        raise
    return connection


def decode_header(row: Any, path: str) -> dict[str, Any]:
    if row is None:
        raise SessionCorruptError(path, 1, 0, "the header table has no row", where="header")
    fmt, session_id, created_at = row
    if fmt != FORMAT_VERSION:
        problem = f"header field 'format' is {fmt!r}; this reader knows {FORMAT_VERSION}"
        raise SessionCorruptError(path, 1, 0, problem, where="header")
    if not isinstance(session_id, str):
        raise SessionCorruptError(path, 1, 0, "header id is not text", where="header")
    return {"type": "session", "format": fmt, "id": session_id, "createdAt": created_at}


def _decode_row(row: Any, expected: int, path: str) -> Event:
    seq, type_, time_, data = row
    where = f"row seq {seq}"
    line = expected + 2  # the line the event would have in JSONL (header = line 1)
    if seq != expected:
        kind = "gap" if seq > expected else "duplicate"
        problem = f"seq {kind}: seq {seq} where {expected} was expected"
        raise SessionCorruptError(path, line, 0, problem, where=where)
    if type_ not in EVENT_TYPES:
        raise SessionCorruptError(path, line, 0, f"type {type_!r} is not known", where=where)
    try:
        decoded = orjson.loads(data)
    except (orjson.JSONDecodeError, TypeError) as exc:
        raise SessionCorruptError(path, line, 0, f"data is not JSON ({exc})", where=where) from None
    if not isinstance(decoded, dict):
        raise SessionCorruptError(path, line, 0, "data is not a JSON object", where=where)
    return Event(seq, type_, float(time_), decoded)


def read_database(connection: sqlite3.Connection, path: str) -> LoadedLog:
    """The stored session: header and events, checked for integrity."""
    try:
        check = connection.execute("PRAGMA quick_check").fetchone()[0]
        if check != "ok":
            raise SessionCorruptError(path, 1, 0, f"quick_check: {check}", where="database")
        header = decode_header(
            connection.execute("SELECT format, id, created_at FROM header").fetchone(), path
        )
        rows = connection.execute("SELECT seq, type, time, data FROM events ORDER BY seq")
        events = tuple(_decode_row(row, index, path) for index, row in enumerate(rows))
    except sqlite3.DatabaseError as exc:  # not a database, missing tables, malformed
        raise SessionCorruptError(path, 1, 0, str(exc), where="database") from None
    return LoadedLog(header, events, len(events))
