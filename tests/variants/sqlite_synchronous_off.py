"""Variant: the SQLite backend runs with `PRAGMA synchronous=OFF` (run with --backend sqlite).

Bug imitated: a backend tuned for speed that lets SQLite skip every fsync.
A commit returns once its WAL frames are in the page cache; a SIGKILL loses
nothing (the kernel still has the bytes), a power loss loses every commit
since the database was created.

The oracle must report: REQUEST_ENVELOPE_LOST (and COMPLETED_TURN_LOST),
from the states rebuilt from the traced writes.
Shows at: chat.toml flush/written#2 under power-loss.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from _common import run

import faultlab.runtime.backends.sqlite as backend


def _connect_without_sync(path: Path) -> sqlite3.Connection:
    connection = _connect(path)
    connection.execute("PRAGMA synchronous=OFF")
    return connection


_connect = backend.connect
backend.connect = _connect_without_sync

if __name__ == "__main__":
    run()
