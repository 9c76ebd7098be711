"""Variant: a refused writer deletes the lock file as "stale".

Bug imitated: a writer that cannot take the lock decides the lock file is
left over from a crash and unlinks it before giving up. The live writer
still holds its flock, but on a file no longer in the directory: the next
writer creates a fresh lock file, locks it at once and writes on the live
session. A second writer alone is refused, so only a third one shows it.

The oracle must report: SEQ_FORK (the second writer left the lock file
deleted; the third writer was not refused and changed the log).
Shows at: payment.toml tool/durable#1 under the second-writer fault.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from _common import run

from faultlab.runtime.backends import jsonl, writerlock
from faultlab.runtime.backends.base import SessionLockedError


def _unlinking(lock_path: Path, session_path: Path) -> int:
    try:
        return writerlock.take_writer_lock(lock_path, session_path)
    except SessionLockedError:
        with contextlib.suppress(FileNotFoundError):
            lock_path.unlink()  # the bug
        raise


jsonl.take_writer_lock = _unlinking  # type: ignore[assignment]

if __name__ == "__main__":
    run()
