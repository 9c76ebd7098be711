"""Variant: the SQLite backend's `sync` does not commit (run with --backend sqlite).

Bug imitated: a flush that returns once the rows are inside the open
transaction; the transaction is committed only when the session is closed.
Every checkpoint "succeeds", and a SIGKILL loses everything since the open.

The oracle must report: REQUEST_ENVELOPE_LOST (and SETTLED_STEP_LOST).
Shows at: chat.toml model/chunk#1 under sigkill.
"""

from __future__ import annotations

from _common import run

from faultlab.runtime.backends.sqlite import SqliteBackend


def _sync_without_commit(self: SqliteBackend) -> None:
    self._synced_seq = self._next_seq


def _close_commits(self: SqliteBackend) -> None:
    if self._db is not None and self._db.in_transaction:
        self._db.execute("COMMIT")
    _close(self)


_close = SqliteBackend.close
SqliteBackend.sync = _sync_without_commit  # type: ignore[method-assign]
SqliteBackend.close = _close_commits  # type: ignore[method-assign]

if __name__ == "__main__":
    run()
