# The world ledger: a file outside the session log that stands for the
# external world.  Each applied side effect is one fsynced JSON line keyed by
# call id, so the lab can count real effects after a crash.  Effects that carry
# an idempotency key are applied at most once per key.
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

__all__ = ["WorldLedger"]


class WorldLedger:
    """Append-only, fsynced record of applied effects."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.records: list[dict[str, Any]] = []
        if self.path.exists():
            for line in self.path.read_bytes().splitlines():
                try:
                    record = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue  # a torn last record was never applied
                if isinstance(record, dict):
                    self.records.append(record)
        self._keys = {r["key"] for r in self.records if r.get("key") is not None}
        self._fd = -1

    def apply(self, *, call_id: str, tool: str, arguments: dict[str, Any], key: str | None) -> bool:
        """Record one effect; return False when `key` was applied before."""
        if key is not None and key in self._keys:
            return False
        record = {"callId": call_id, "tool": tool, "arguments": arguments, "key": key}
        if self._fd < 0:
            self._open()
        os.write(self._fd, orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE))
        os.fsync(self._fd)
        self.records.append(record)
        if key is not None:
            self._keys.add(key)
        return True

    def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        existed = self.path.exists()
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        if existed and os.path.getsize(self.path) and not self.path.read_bytes().endswith(b"\n"):
            # A torn last record was never applied; end its line so the next
            # record is not glued to it (and lost to the reader).
            os.write(self._fd, b"\n")
        if not existed:  # the world must not forget the file that records it
            directory = os.open(self.path.parent, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)

    def count(self, tool: str) -> int:
        return sum(1 for record in self.records if record["tool"] == tool)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
