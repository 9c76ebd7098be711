# The SQLite backend (standard library `sqlite3`): one session per directory
# (`session.sqlite`), WAL journal with synchronous=FULL, one transaction per
# flush (`append_batch` opens it and inserts, `sync` commits it; any failure
# rolls it back, so a retry can never duplicate a seq), seq as the primary
# key, the header in its own table, atomic creation (built under a temp name,
# fsynced, linked into place, directory fsynced) and the same exclusive
# writer lock file as JSONL.  Schema and reader: sqlite_format.py.
from __future__ import annotations

import errno
import itertools
import os
import sqlite3
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import orjson

from faultlab.probe import PROBE
from faultlab.runtime.backends.base import (
    LoadedLog,
    SessionCorruptError,
    SessionMissingError,
    SessionSummary,
)
from faultlab.runtime.backends.sqlite_format import SCHEMA, connect, decode_header, read_database
from faultlab.runtime.backends.writerlock import (
    InjectedFailures,
    resumes_existing,
    take_writer_lock,
)
from faultlab.runtime.events import FORMAT_VERSION, Event

__all__ = ["DB_NAME", "SqliteBackend"]

DB_NAME = "session.sqlite"
LOCK_NAME = "session.sqlite.lock"

# sqlite3 errors the coordinator must see as a failed flush (an OSError).
_ERRNO = {"SQLITE_FULL": errno.ENOSPC, "SQLITE_READONLY": errno.EROFS}


def _as_os_error(exc: sqlite3.Error, path: Path) -> OSError:
    name = str(getattr(exc, "sqlite_errorname", "") or "")
    code = _ERRNO.get(name, errno.EIO)
    return OSError(code, f"{exc} ({name or 'sqlite error'})", str(path))


def _fsync_path(path: Path, *, directory: bool = False) -> None:
    flags = os.O_RDONLY | (os.O_DIRECTORY if directory else 0)
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class SqliteBackend:
    """Durable SQLite storage of the session kept in `directory`."""

    kind = "sqlite"

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.path = self.directory / DB_NAME
        self._db: sqlite3.Connection | None = None
        self._lock_fd = -1
        self._next_seq = 0
        self._synced_seq = 0
        self._injected = InjectedFailures()

    @property
    def location(self) -> str:
        return str(self.path)

    # -- opening -----------------------------------------------------------

    def open(self, *, session_id: str | None, create: bool, resume: bool) -> LoadedLog:
        """Lock the session and load it, creating it when allowed and missing."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self._lock()
        try:
            if not resumes_existing(
                self.path, create=create, resume=resume, missing="session database"
            ):
                self._create(session_id or uuid.uuid4().hex)
            try:
                self._db = connect(self.path)
            except sqlite3.DatabaseError as exc:
                where = str(self.path)
                raise SessionCorruptError(where, 1, 0, str(exc), where="database") from None
            loaded = read_database(self._db, str(self.path))
        except BaseException:
            self.close()
            raise
        self._next_seq = self._synced_seq = len(loaded.events)
        return loaded

    def _lock(self) -> None:
        self._lock_fd = take_writer_lock(self.directory / LOCK_NAME, self.path)

    def _create(self, session_id: str) -> None:
        # Built complete under a temp name, so the session either does not
        # exist or has its schema and header: never half a database.
        temp = self.directory / f".{DB_NAME}.{os.getpid()}.tmp"
        for stale in (temp, Path(f"{temp}-wal"), Path(f"{temp}-shm")):
            stale.unlink(missing_ok=True)
        db = connect(temp)
        try:
            db.execute("BEGIN IMMEDIATE")
            for statement in SCHEMA:
                db.execute(statement)
            db.execute(
                "INSERT INTO header (only, format, id, created_at) VALUES (1, ?, ?, ?)",
                (FORMAT_VERSION, session_id, time.time()),
            )
            db.execute("COMMIT")
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            db.close()  # the last connection: the WAL is folded into the file
        try:
            _fsync_path(temp)
            os.link(temp, self.path)
        finally:
            temp.unlink(missing_ok=True)
        if PROBE.enabled:
            PROBE.fact("create", file=str(self.path), size=self.path.stat().st_size)
        _fsync_path(self.directory, directory=True)
        if PROBE.enabled:
            PROBE.fact("dirsync", dir=str(self.directory))

    # -- writing -----------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            raise ValueError(f"{self.path}: the session is not open for writing")
        return self._db

    def append_batch(self, events: Sequence[Event]) -> None:
        """Open this flush's transaction and insert `events` into it."""
        if not events:
            return
        db = self._connection()
        first = events[0].seq
        if first != self._next_seq:
            raise ValueError(f"batch starts at seq {first}; the log's next seq is {self._next_seq}")
        for previous, event in itertools.pairwise(events):
            if event.seq != previous.seq + 1:
                raise ValueError(f"seq gap inside batch: {previous.seq} then {event.seq}")
        rows = [(e.seq, e.type, e.time, orjson.dumps(e.data).decode()) for e in events]
        try:
            if not db.in_transaction:
                db.execute("BEGIN IMMEDIATE")
            db.executemany("INSERT INTO events (seq, type, time, data) VALUES (?, ?, ?, ?)", rows)
            self._maybe_fail("write")  # after the inserts: the rollback is real
        except sqlite3.IntegrityError as exc:
            self._roll_back()
            raise ValueError(f"{self.path}: seqs {first}..{events[-1].seq}: {exc}") from None
        except sqlite3.Error as exc:
            self._roll_back()
            raise _as_os_error(exc, self.path) from None
        except OSError:
            self._roll_back()
            raise
        self._next_seq = events[-1].seq + 1
        if PROBE.enabled:
            PROBE.fact("insert", file=str(self.path), first=first, last=events[-1].seq)
            PROBE.reach("flush/written", file=str(self.path), first=first, last=events[-1].seq)

    def sync(self) -> None:
        """Commit the open transaction (WAL + synchronous=FULL: fsynced)."""
        db = self._connection()
        try:
            self._maybe_fail("sync")
            if db.in_transaction:
                db.execute("COMMIT")
        except sqlite3.Error as exc:
            self._roll_back()
            raise _as_os_error(exc, self.path) from None
        except OSError:
            self._roll_back()
            raise
        self._synced_seq = self._next_seq
        if PROBE.enabled:
            PROBE.fact("commit", file=str(self.path), next=self._synced_seq)

    def _roll_back(self) -> None:
        # Undo everything not committed: the coordinator retries the whole batch.
        db = self._connection()
        if db.in_transaction:
            db.execute("ROLLBACK")
        self._next_seq = self._synced_seq
        if PROBE.enabled:
            PROBE.fact("rollback", file=str(self.path), next=self._synced_seq)

    def arm_failure(self, op: str, errno_: int) -> None:
        self._injected.arm(op, errno_)

    def _maybe_fail(self, op: str) -> None:
        self._injected.maybe_fail(op, self.path)

    # -- reading and closing ----------------------------------------------

    def load(self) -> LoadedLog:
        """Read the committed session (a separate read-only connection, no lock)."""
        if not self.path.exists():
            raise SessionMissingError(f"{self.path}: no session database")
        try:
            reader = sqlite3.connect(f"{self.path.as_uri()}?mode=ro", uri=True, timeout=5.0)
        except sqlite3.DatabaseError as exc:
            raise SessionCorruptError(str(self.path), 1, 0, str(exc), where="database") from None
        try:
            return read_database(reader, str(self.path))
        finally:
            reader.close()

    @staticmethod
    def summarize(directory: Path) -> SessionSummary | None:
        """The session stored in `directory`, if there is one (for listings)."""
        path = directory / DB_NAME
        if not path.is_file():
            return None
        try:
            reader = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=5.0)
            try:
                row = reader.execute("SELECT format, id, created_at FROM header").fetchone()
                header = decode_header(row, str(path))
                count = reader.execute("SELECT count(*) FROM events").fetchone()[0]
            finally:
                reader.close()
        except (sqlite3.DatabaseError, SessionCorruptError) as exc:
            return SessionSummary(str(directory), str(path), None, None, None, str(exc))
        return SessionSummary(
            str(directory), str(path), header["id"], header["createdAt"], int(count), None
        )

    def close(self) -> None:
        if self._db is not None:
            try:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")  # an unsynced batch is not durable
                self._db.close()
            finally:
                self._db = None
        if self._lock_fd >= 0:
            os.close(self._lock_fd)  # closing the descriptor releases the flock
            self._lock_fd = -1
