# The lab's own reader of the SQLite session store (docs/backends.md): what a
# session database durably says, as the same `LogView` the JSONL reader gives,
# so the oracle judges both backends alike.  Written from the documented
# schema, not from the runtime's backend, on purpose (an oracle that shares
# the code it checks shares its bugs).  It never touches the evidence: a
# snapshot copies the database and its WAL aside and folds the WAL into one
# standalone file there; reading works on those bytes, in memory.  In SQLite
# every stored row is committed (a transaction is all or nothing), so there is
# no torn tail: any bad row is committed damage.  Never raises on any input.
from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import orjson

from faultlab.lab.read.identity import with_identity_problems
from faultlab.lab.read.lines import is_event, what_is_wrong
from faultlab.lab.read.view import (
    BAD_HEADER,
    CORRUPT_COMMITTED_LOG,
    SEQ_DUPLICATE,
    SEQ_GAP,
    LogEvent,
    LogProblem,
    LogView,
)
from faultlab.userfiles import TargetFileError, copy_target, read_target

__all__ = ["MAGIC", "is_sqlite", "parse_sqlite", "read_sqlite_file", "render_jsonl", "snapshot"]

MAGIC = b"SQLite format 3\x00"
_FORMAT = 1


def is_sqlite(data: bytes) -> bool:
    return data.startswith(MAGIC)


def snapshot(path: Path, raw: bytes | None = None) -> bytes:
    """The database at `path` (its bytes `raw` when already read) with its WAL
    folded in, as one standalone file (rollback-journal mode, so it can be
    read from memory); b"" if there is none.  Bytes that do not open as a
    database come back as they are."""
    if raw is None:  # read bounded, never through a link (faultlab.userfiles)
        raw = read_target(path, what="session database")
        if raw is None:
            return b""
    with tempfile.TemporaryDirectory(prefix="faultlab-sqlite-") as work:
        copy = Path(work) / "session.sqlite"
        copy.write_bytes(raw)
        # A hot rollback journal is copied too: SQLite rolls it back on open.
        for suffix in ("-wal", "-journal"):
            copy_target(f"{path}{suffix}", f"{copy}{suffix}", what="SQLite journal")
        try:
            db = sqlite3.connect(copy, isolation_level=None)
            try:
                db.execute("PRAGMA synchronous=OFF")  # a scratch copy: no fsync needed
                db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                db.execute("PRAGMA journal_mode=DELETE")
            finally:
                db.close()
        # A damaged file's error text may not even be UTF-8 (Python then
        # fails decoding SQLite's message): damaged all the same.
        except (sqlite3.Error, UnicodeDecodeError):
            return raw
        return copy.read_bytes()


def _bad(path: str, size: int, what: str) -> LogView:
    problem = LogProblem(BAD_HEADER, 1, 0, what)
    return LogView(path, True, None, (), size, 0, 0, (problem,))


def _truncated(data: bytes) -> str | None:
    """What the file's own 100-byte header says is missing, if anything.
    SQLite itself only says "unable to open database file" of a short file."""
    size = len(data)
    if size < 100:
        return f"the database is truncated: {size} byte(s), less than SQLite's 100-byte header"
    page = int.from_bytes(data[16:18], "big")
    page = 65536 if page == 1 else page
    if page < 512 or page & (page - 1):
        return f"the database header is damaged: page size {page} is not a power of two"
    pages = int.from_bytes(data[28:32], "big")  # valid when the change counters agree
    if pages and data[24:28] == data[92:96] and pages * page > size:
        return (f"the database is truncated: its header says {pages} page(s) of {page} bytes "
                f"({pages * page} bytes), the file has {size}")  # fmt: skip
    if size % page:
        return f"the database is truncated: {size} bytes is not a whole number of {page}-byte pages"
    return None


def _foreign(db: sqlite3.Connection) -> str | None:
    """Why an SQLite database is not a faultlab session store, if it is not."""
    tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    missing = [name for name in ("header", "events") if name not in tables]
    if not missing:
        return None
    shown = ", ".join(tables[:5]) + (", ..." if len(tables) > 5 else "") or "none"
    return (f"not a faultlab session database (docs/backends.md): it has no "
            f"{' and no '.join(repr(m) for m in missing)} table (its tables: {shown})")  # fmt: skip


def _header(db: sqlite3.Connection) -> dict[str, Any] | str:
    rows = db.execute("SELECT format, id, created_at FROM header").fetchall()
    if len(rows) != 1:
        return f"the header table has {len(rows)} rows, not 1"
    fmt, session_id, created_at = rows[0]
    if fmt != _FORMAT or isinstance(fmt, bool):
        return f"header field 'format' is {fmt!r}; this reader knows {_FORMAT}"
    if not isinstance(session_id, str):
        return "header field 'id' is missing or not text"
    return {"type": "session", "format": fmt, "id": session_id, "createdAt": created_at}


def parse_sqlite(data: bytes, path: str) -> LogView:
    """Read a session database from its (snapshot) bytes."""
    size = len(data)
    if not data:
        return _bad(path, 0, "no session database")
    if not is_sqlite(data):
        return _bad(path, size, "the file is not an SQLite database")
    if (truncated := _truncated(data)) is not None:
        return _bad(path, size, truncated)
    try:
        db = sqlite3.connect(":memory:")
    except sqlite3.Error as exc:  # pragma: no cover - memory exhausted
        return _bad(path, size, f"cannot open an in-memory database ({exc})")
    try:
        db.deserialize(data)
        check = db.execute("PRAGMA quick_check").fetchone()[0]
        if check != "ok":
            return _bad(path, size, f"the database is damaged: {check}")
        if (foreign := _foreign(db)) is not None:
            return _bad(path, size, foreign)
        header = _header(db)
        if isinstance(header, str):
            return _bad(path, size, header)
        rows = db.execute("SELECT rowid, seq, type, time, data FROM events ORDER BY rowid")
        events, problems = _events(rows.fetchall())
    except sqlite3.Error as exc:
        return _bad(path, size, f"cannot read the database ({exc})")
    except UnicodeDecodeError:  # SQLite's own message about the damage is not UTF-8
        return _bad(path, size, "cannot read the database (it is damaged)")
    finally:
        db.close()
    return LogView(path, True, header, tuple(events), size, size, 0,
                   with_identity_problems(problems, events))  # fmt: skip


def _decode(row: tuple[Any, ...]) -> dict[str, Any] | str:
    _rowid, seq, kind, moment, data = row
    if not isinstance(data, str | bytes):
        return f"column 'data' is {type(data).__name__}, not JSON text"
    try:
        decoded = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        return f"column 'data' is not JSON ({exc})"
    obj = {"seq": seq, "type": kind, "time": moment, "data": decoded}
    return obj if is_event(obj) else what_is_wrong(obj)


def _events(rows: list[tuple[Any, ...]]) -> tuple[list[LogEvent], list[LogProblem]]:
    events: list[LogEvent] = []
    problems: list[LogProblem] = []
    expected = 0
    unread = 0  # bad rows since the last good one: each may have held one seq
    for index, row in enumerate(rows):
        line, rowid = index + 2, row[0]  # line: where it would be in JSONL
        decoded = _decode(row)
        if isinstance(decoded, str):
            what = f"row {index + 1} (rowid {rowid}): {decoded}"
            problems.append(LogProblem(CORRUPT_COMMITTED_LOG, line, rowid, what))
            unread += 1
            continue
        seq: int = decoded["seq"]
        if seq < expected or seq > expected + unread:
            code, kind = (SEQ_GAP, "gap") if seq > expected else (SEQ_DUPLICATE, "duplicate")
            wanted = f"{expected}" if not unread else f"{expected}..{expected + unread}"
            what = f"row {index + 1} (rowid {rowid}): seq {kind}: seq {seq} where {wanted}"
            what += " was expected"
            problems.append(LogProblem(code, line, rowid, what))
        expected = max(expected, seq + 1)
        unread = 0
        events.append(
            LogEvent(seq, decoded["type"], float(decoded["time"]), decoded["data"], line, rowid)
        )
    return events, problems


def read_sqlite_file(path: str | Path) -> LogView:
    """Read the session database at `path` (its WAL beside it is included)."""
    where = Path(path)
    if not where.exists():
        return LogView(str(path), False, None, (), 0, 0, 0, ())
    if where.is_dir():
        return _bad(str(path), 0, "the path is a directory, not a session database")
    try:
        return parse_sqlite(snapshot(where), str(path))
    except TargetFileError as refused:  # a symlink, a FIFO, a device, too large
        return _bad(str(path), 0, f"cannot read the session database: {refused.problem}")


def render_jsonl(view: LogView) -> bytes:
    """The view as log format v1 lines (a readable dump of a database)."""
    if view.header is None:
        return b""
    lines = [orjson.dumps(view.header)]
    lines += [
        orjson.dumps({"seq": e.seq, "type": e.type, "time": e.time, "data": e.data})
        for e in view.events
    ]
    return b"\n".join(lines) + b"\n"
