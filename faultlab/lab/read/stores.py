# Where each persistence backend keeps a session, as the lab sees it: the log
# file in a session directory, how to take a snapshot of it (bytes the lab can
# keep, compare and put back), how to read a snapshot with the lab's own
# reader, and which faults the backend cannot be tested with (and why).
# JSONL: the snapshot is the file.  SQLite: the database with its WAL folded
# in (faultlab/lab/read/sqlite.py).  This module never imports the runtime.
from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from faultlab.lab.errors import LabUsageError
from faultlab.lab.read.jsonl import parse_log, read_log_file
from faultlab.lab.read.sqlite import is_sqlite, parse_sqlite, read_sqlite_file, snapshot
from faultlab.lab.read.view import LogView
from faultlab.userfiles import MAX_LOG_BYTES, read_bytes, read_target

__all__ = ["BACKENDS", "LogStore", "find_log", "read_any", "store_for"]

BACKENDS = ("jsonl", "sqlite")

_SQLITE_POWER = (
    "SQLite does its own file I/O inside the library and overwrites its files in place: "
    "its power-loss states are rebuilt from the bytes of the reference run's traced "
    "system calls, and this run has no system-call trace"
)
_SQLITE_CORRUPT = (
    "the fault zeroes one committed line of a JSONL log; damaging one committed row of a "
    "SQLite database (its b-tree pages, its WAL frames and their checksums) is a different "
    "fault that the lab does not have yet"
)


def _read_file(path: Path) -> bytes:
    """A session log a target wrote (b"" when there is none), read bounded:
    faultlab.userfiles raises a `TargetFileError` for a symlink, a FIFO, a
    device or a log over MAX_TARGET_BYTES."""
    return read_target(path, what="session log") or b""


@dataclass(frozen=True, slots=True)
class LogStore:
    """One backend's session log, as files in a session directory."""

    backend: str
    log_name: str
    suffix: str  # of the artifacts that keep a snapshot (".jsonl", ".sqlite")
    _take: Callable[[Path], bytes]
    _parse: Callable[[bytes, str], LogView]
    # fault -> why this backend cannot be tested with it
    unsupported: dict[str, str] = field(default_factory=dict)
    # fault -> why it cannot be tested without the system-call ground truth
    needs_trace: dict[str, str] = field(default_factory=dict)

    def unsupported_reason(self, fault: str, ground_truth: str) -> str | None:
        """Why ``fault`` cannot run on this backend under ``ground_truth``
        ("syscalls" or "facts"); None: it can."""
        reason = self.unsupported.get(fault)
        if reason is None and ground_truth != "syscalls":
            reason = self.needs_trace.get(fault)
        return reason

    def log_path(self, session_dir: Path) -> Path:
        return session_dir / self.log_name

    def exists(self, session_dir: Path) -> bool:
        return self.log_path(session_dir).exists()

    def take(self, session_dir: Path) -> bytes:
        """A snapshot of the session's log (b"" when there is none)."""
        return self._take(self.log_path(session_dir))

    def parse(self, data: bytes, path: str | Path) -> LogView:
        """What a snapshot durably says, read by the lab's own reader."""
        return self._parse(data, str(path))

    def view(self, session_dir: Path) -> LogView:
        return self.parse(self.take(session_dir), self.log_path(session_dir))

    def put(self, session_dir: Path, data: bytes) -> None:
        """Make `data` (a snapshot) the session's log."""
        session_dir.mkdir(parents=True, exist_ok=True)
        self.log_path(session_dir).write_bytes(data)

    def save(self, data: bytes, where: Path, stem: str) -> Path:
        """Keep a snapshot as an artifact (`stem` + suffix); SQLite also gets a
        readable JSONL dump beside it."""
        path = where / f"{stem}{self.suffix}"
        path.write_bytes(data)
        if self.backend == "sqlite":
            from faultlab.lab.read.sqlite import render_jsonl

            (where / f"{stem}.dump.jsonl").write_bytes(render_jsonl(self.parse(data, path)))
        return path


_STORES = {
    "jsonl": LogStore("jsonl", "session.jsonl", ".jsonl", _read_file, parse_log),
    "sqlite": LogStore(
        "sqlite", "session.sqlite", ".sqlite", snapshot, parse_sqlite,
        {"corrupt-committed": _SQLITE_CORRUPT},
        {"power-loss": _SQLITE_POWER, "torn-write": _SQLITE_POWER},
    ),
}  # fmt: skip


def store_for(backend: str) -> LogStore:
    try:
        return _STORES[backend]
    except KeyError:
        raise LabUsageError(
            f"unknown backend {backend!r} (backends: {', '.join(BACKENDS)})"
        ) from None


def find_log(session_dir: Path) -> Path:
    """The session log in a session directory (whichever backend wrote it)."""
    # lexists: a symlink loop is found, and then refused by name when it is read
    found = [p for s in _STORES.values() if os.path.lexists(p := s.log_path(session_dir))]
    if len(found) > 1:
        names = " and ".join(p.name for p in found)
        raise LabUsageError(f"{session_dir}: holds both {names}; name the file to inspect")
    if not found:
        names = " or ".join(s.log_name for s in _STORES.values())
        raise LabUsageError(f"{session_dir}: no session log ({names}) in this directory")
    return found[0]


def read_user_log(path: str | Path) -> LogView:
    """A session log a user named (`inspect`), of either backend.  Read through
    faultlab.userfiles: a missing file, a FIFO, a device, a symlink loop or a
    file over MAX_LOG_BYTES is a UserFileError (one line, exit 2), never a hang."""
    data = read_bytes(path, what="session log", limit=MAX_LOG_BYTES)
    if is_sqlite(data):
        return parse_sqlite(snapshot(Path(path), data), str(path))
    return parse_log(data, str(path))


def read_any(path: str | Path) -> LogView:
    """Read a log file of either backend (told apart by the SQLite magic bytes)."""
    where = Path(path)
    try:  # non-blocking and regular files only: a FIFO never hangs it
        fd = os.open(where, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return read_log_file(where)
            head = os.read(fd, 16)
        finally:
            os.close(fd)
    except (OSError, ValueError):
        return read_log_file(where)  # it reports missing/unreadable files itself
    return read_sqlite_file(where) if is_sqlite(head) else read_log_file(where)
