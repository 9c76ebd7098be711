"""Variant: the SQLite backend takes no writer lock (run with --backend sqlite).

Bug imitated: relying on SQLite's own locking, which only serializes single
transactions: two processes resume the same session and both append.

The oracle must report: SEQ_FORK.
Shows at: payment.toml tool/durable#1 under the second-writer fault.
"""

from __future__ import annotations

from _common import run

from faultlab.runtime.backends.sqlite import SqliteBackend


def _no_lock(self: SqliteBackend) -> None:
    return None


SqliteBackend._lock = _no_lock  # type: ignore[method-assign]

if __name__ == "__main__":
    run()
