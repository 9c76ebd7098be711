# The MCP tool server's writer of the world ledger.  The lab must not import
# the reference runtime, yet the black-box oracle reads this file with the same
# reader (`faultlab.lab.process.reference.read_ledger`), so the record format
# is the runtime's: one fsynced JSON line {"callId","tool","arguments","key"}
# per applied effect (`LedgerRecord`), the directory fsynced when the file is created.  Unlike
# the runtime's, it is opened eagerly (an unwritable ledger is a usage error at
# start, not a crash mid-call) and it takes an flock around each append: an
# orphaned tool server of a killed agent may still be writing when the resumed
# agent's new one starts, and a key must be applied once across both.
from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Any

import orjson

from faultlab.lab.errors import LabUsageError
from faultlab.lab.process.records import LedgerRecord, ledger_record

__all__ = ["LedgerWriter"]


class LedgerWriter:
    """Append-only, fsynced, flock-serialised record of applied effects."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        existed = self.path.exists()
        try:
            self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise LabUsageError(f"cannot open ledger {self.path}: {exc.strerror}") from None
        if not existed:  # the world must not forget the file that records it
            directory = os.open(self.path.parent, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
        self._read = 0  # bytes of the file already parsed into `records`
        self.records: list[LedgerRecord] = []
        with self._locked():
            self._catch_up()

    def apply(self, *, call_id: str, tool: str, arguments: dict[str, Any], key: str | None) -> bool:
        """Record one effect, fsynced before returning; False when `key` was
        applied before (by this process or another writer of the same file)."""
        record: LedgerRecord = {"callId": call_id, "tool": tool, "arguments": arguments, "key": key}
        with self._locked():
            self._catch_up()
            if key is not None and any(r.get("key") == key for r in self.records):
                return False
            line = orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE)
            os.write(self._fd, line)
            os.fsync(self._fd)
            self._read += len(line)
            self.records.append(record)
        return True

    def count(self, tool: str) -> int:
        """Effects of `tool` applied so far, by any writer."""
        with self._locked():
            self._catch_up()
        return sum(1 for record in self.records if record.get("tool") == tool)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _locked(self) -> _Flock:
        return _Flock(self._fd)

    def _catch_up(self) -> None:
        """Parse what other writers appended since we last looked."""
        size = os.fstat(self._fd).st_size
        if size <= self._read:
            return
        data = os.pread(self._fd, size - self._read, self._read)
        if not data.endswith(b"\n"):
            # A torn last record (its writer was killed) was never applied; end
            # its line so the next record is not glued to it and lost.
            os.write(self._fd, b"\n")
            data += b"\n"
            size += 1
        for line in data.split(b"\n"):
            try:
                record = ledger_record(orjson.loads(line))
            except orjson.JSONDecodeError:
                continue
            if record is not None:
                self.records.append(record)
        self._read = size


class _Flock:
    def __init__(self, fd: int) -> None:
        self._fd = fd

    def __enter__(self) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_EX)

    def __exit__(self, *_: object) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)
